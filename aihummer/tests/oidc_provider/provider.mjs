// A real OpenID provider for the SSO tests: the OpenID-certified `oidc-provider`
// package with its development login and consent pages (any password is accepted;
// the login is the account id, i.e. the `sub` claim).
//
// Configuration comes from the environment (set by aihummer/tests/oidc_provider.py):
//   PORT, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, POST_LOGOUT_REDIRECT_URI,
//   API_AUDIENCE, ACCOUNTS_FILE (JSON {"<sub>": {claims}}, re-read at every lookup
//   so a test can change a person's groups while the provider runs); for the MCP
//   client's OAuth sign-in: MCP_AUDIENCE (the /mcp resource), MCP_CLIENT_ID,
//   MCP_CLIENT_SECRET, MCP_REDIRECT_URI and MCP_TOKEN_TTL (seconds).
import { readFileSync } from "node:fs";
import Provider, { errors } from "oidc-provider";

const env = process.env;
const issuer = `http://127.0.0.1:${env.PORT}`;

function accountClaims(sub) {
  return JSON.parse(readFileSync(env.ACCOUNTS_FILE, "utf8"))[sub];
}

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: env.CLIENT_ID,
      client_secret: env.CLIENT_SECRET,
      redirect_uris: [env.REDIRECT_URI],
      post_logout_redirect_uris: [env.POST_LOGOUT_REDIRECT_URI],
      token_endpoint_auth_method: "client_secret_post",
      id_token_signed_response_alg: "RS256",
    },
    // An MCP client (pre-registered), signing people in for the /mcp resource.
    ...(env.MCP_CLIENT_ID
      ? [
          {
            client_id: env.MCP_CLIENT_ID,
            client_secret: env.MCP_CLIENT_SECRET,
            redirect_uris: [env.MCP_REDIRECT_URI],
            token_endpoint_auth_method: "client_secret_post",
            grant_types: ["authorization_code"],
          },
        ]
      : []),
  ],
  // Scopes it advertises and lets a registering client ask for: the standard ones and
  // the resource servers' (/mcp's `mcp`, the API's `api`), as a real provider lists them.
  scopes: ["openid", "offline_access", "mcp", "api"],
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name", "preferred_username"],
    groups: ["groups"],
  },
  // Profile claims in the ID token itself: the access token below is audienced to
  // the API, so it cannot be used at the userinfo endpoint.
  conformIdTokenClaims: false,
  async findAccount(ctx, sub) {
    const claims = accountClaims(sub);
    if (!claims) return undefined;
    return { accountId: sub, claims: async () => ({ sub, ...claims }) };
  },
  features: {
    devInteractions: { enabled: true },
    // Dynamic client registration (RFC 7591), open: an MCP client without a
    // pre-registered client registers itself, as the MCP specification lets it.
    registration: { enabled: true },
    rpInitiatedLogout: { enabled: true },
    // The authorization code flow's access token is a JWT (RFC 9068) for the API.
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf || env.API_AUDIENCE,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource) => {
        if (env.MCP_AUDIENCE && resource === env.MCP_AUDIENCE) {
          const ttl = Number(env.MCP_TOKEN_TTL || 600);
          return { scope: "mcp", audience: env.MCP_AUDIENCE, accessTokenFormat: "jwt", accessTokenTTL: ttl };
        }
        if (resource !== env.API_AUDIENCE) throw new errors.InvalidTarget();
        return { scope: "api", audience: env.API_AUDIENCE, accessTokenFormat: "jwt", accessTokenTTL: 600 };
      },
    },
  },
  // An access token lives as long as its resource server says (600 s unless MCP_TOKEN_TTL).
  ttl: {
    AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL || 600,
    IdToken: 600,
    Session: 3600,
    Interaction: 600,
    Grant: 3600,
  },
});

provider.listen(Number(env.PORT), "127.0.0.1", () => console.log(`ready ${issuer}`));
