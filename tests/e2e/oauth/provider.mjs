// A certified OpenID Provider (oidc-provider) on loopback, as an operator's authorization
// server would be: discovery, dynamic client registration, authorization code with PKCE,
// resource indicators (RFC 8707) minting JWT access tokens for the resource asked for.
// The one shortcut is the sign-in page: every interaction signs in as $ACCOUNT and grants
// what was asked, as a person clicking "allow" would. `GET /test/jwks-fetches` says how
// many times its key set was fetched, for the test of the resource server's fetch floor.
//
// Environment: PORT, JWKS_FILE (the private signing keys, a JWK set), RESOURCES (the
// resource URIs it mints tokens for, space-separated), SCOPES (the scopes it grants),
// ACCOUNT, GROUPS (space-separated, put in the tokens' `groups` claim).
import { readFileSync } from "node:fs";
import Provider, { errors } from "oidc-provider";

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const resources = (process.env.RESOURCES ?? "").split(" ").filter(Boolean);
const scopes = process.env.SCOPES ?? "";
const account = process.env.ACCOUNT ?? "alice";
const groups = (process.env.GROUPS ?? "").split(" ").filter(Boolean);

const provider = new Provider(issuer, {
  jwks: JSON.parse(readFileSync(process.env.JWKS_FILE, "utf8")),
  scopes: ["openid", "offline_access", ...scopes.split(" ").filter(Boolean)],
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resources[0],
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (!resources.includes(resource)) throw new errors.InvalidTarget();
        return {
          scope: scopes,
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        };
      },
    },
  },
  extraTokenClaims: () => (groups.length ? { groups } : undefined),
  pkce: { required: () => true },
});

let jwksFetches = 0;
provider.use(async (ctx, next) => {
  if (ctx.path === "/jwks") jwksFetches += 1;
  if (ctx.path === "/test/jwks-fetches") {
    ctx.body = { fetches: jwksFetches };
    return;
  }
  if (!ctx.path.startsWith("/interaction/")) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  let result;
  if (details.prompt.name === "login") {
    result = { login: { accountId: account } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    for (const [resource, wanted] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, wanted.join(" "));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true }));
});

provider.listen(port, "127.0.0.1", () => console.log(`listening ${issuer}`));
