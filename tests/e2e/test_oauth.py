"""Hosted mode as an OAuth resource server, against a real authorization server: oidc-provider
(a certified OpenID Provider, tests/e2e/oauth/provider.mjs) on loopback. The official SDK's
OAuth client finds it from the server's 401, registers, signs in with an authorization code
and PKCE, asks for a token for this server (RFC 8707), and calls tools with it. Then each way
a token can be wrong, each with the status and challenge the MCP authorization spec requires;
those tokens are signed with the keys the provider publishes (or deliberately not)."""

import asyncio
import base64
import hashlib
import hmac
import json
import os
import pathlib
import subprocess
import time
import urllib.parse
import urllib.request

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from helpers import INITIALIZE, Hosted, free_port, http_post, message, sdk_result, wait_until
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientMetadata

PROVIDER = pathlib.Path(__file__).parent / "oauth"
SCOPES = "scratchpad:read scratchpad:write scratchpad:summaries"
REDIRECT = "http://127.0.0.1:9/callback"


def signing_key(kid):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return kid, key, {**RSAAlgorithm.to_jwk(key, as_dict=True), "kid": kid, "alg": "RS256", "use": "sig"}


class Issuer:
    """oidc-provider on a free loopback port, signing with `keys` (kid, private key, JWK)."""

    def __init__(self, tmp_path, resources, keys):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp_path, self.resources, self.proc = tmp_path, resources, None
        self.start(keys)

    def start(self, keys):
        self.keys = {kid: key for kid, key, _ in keys}
        jwks = self.tmp_path / "jwks.json"
        jwks.write_text(json.dumps({"keys": [jwk for _, _, jwk in keys]}))
        env = {**os.environ, "PORT": str(self.port), "JWKS_FILE": str(jwks),
               "RESOURCES": " ".join(self.resources), "SCOPES": SCOPES, "ACCOUNT": "alice"}
        self.log = open(self.tmp_path / "provider.log", "a+")
        self.proc = subprocess.Popen(["node", str(PROVIDER / "provider.mjs")], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)

        def up():
            assert self.proc.poll() is None, f"the provider exited: {open(self.log.name).read()[-2000:]}"
            try:
                return urllib.request.urlopen(f"{self.url}/.well-known/openid-configuration", timeout=1).status == 200
            except OSError:
                return False

        wait_until(up, "the authorization server to come up", seconds=30, every=0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def fetches(self):
        return json.load(urllib.request.urlopen(f"{self.url}/test/jwks-fetches", timeout=5))["fetches"]


@pytest.fixture
def deployment(tmp_path):
    """(issuer, hosted server) : the server takes the issuer's tokens and keeps its API keys."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    issuer = Issuer(tmp_path, [resource, "https://elsewhere.example/mcp"], [signing_key("k1")])
    config = (f'[http.oauth]\nresource = "{resource}"\nauthorization_servers = ["{issuer.url}"]\n'
              'agent_claim = "sub"\njwks_refresh_floor_seconds = 2\n')
    hosted = Hosted(tmp_path, extra=config, port=port)
    yield issuer, hosted
    hosted.stop()
    issuer.stop()


def token(issuer, hosted, kid="k1", key=None, alg="RS256", **claims):
    """A token as the issuer mints them, with `claims` changed (None removes one)."""
    now = int(time.time())
    body = {"iss": issuer.url, "sub": "alice", "aud": f"{hosted.url}/mcp", "iat": now, "exp": now + 300,
            "scope": SCOPES, "client_id": "test", "jti": str(now)}
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    return jwt.encode(body, key if key is not None else issuer.keys[kid], algorithm=alg, headers={"kid": kid})


def hs256(claims, secret):
    """The classic forgery: HMAC with the issuer's public key as the secret (PyJWT will not
    make one, rightly)."""
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=")
    signed = part({"alg": "HS256", "typ": "JWT", "kid": "k1"}) + b"." + part(claims)
    mac = base64.urlsafe_b64encode(hmac.new(secret, signed, hashlib.sha256).digest()).rstrip(b"=")
    return (signed + b"." + mac).decode()


def post(hosted, bearer=None, body=None):
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    status, headers, text = http_post(f"{hosted.url}/mcp", body or message("initialize", INITIALIZE, 1), headers)
    return status, {k.lower(): v for k, v in headers.items()}.get("www-authenticate", ""), text


def tool_call(tool, **args):
    return message("tools/call", {"name": tool, "arguments": args}, 2)


class Memory:
    """The SDK's token storage, in memory."""

    def __init__(self):
        self.tokens = self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


class Browser:
    """What a person's browser does with the authorization URL: follows the provider's
    redirects (its sign-in and consent pages answer at once) until it is sent back to the
    client's redirect URI, whose code and state it hands to the client."""

    def __init__(self):
        self.result = None

    async def open(self, url):
        async with httpx2.AsyncClient(follow_redirects=False) as browser:
            for _ in range(20):
                answer = await browser.get(url)
                assert answer.status_code in (302, 303), f"{answer.status_code}: {answer.text[:500]}"
                url = urllib.parse.urljoin(url, answer.headers["location"])
                if url.startswith(REDIRECT):
                    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
                    assert "code" in query, query
                    self.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                                          iss=query.get("iss"))
                    return
        raise AssertionError("the provider never sent the browser back")

    async def back(self):
        return self.result


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_client_discovers_the_provider_signs_in_and_calls_tools(deployment, era):
    issuer, hosted = deployment
    status, challenge, text = post(hosted)
    metadata_url = f"{hosted.url}/.well-known/oauth-protected-resource/mcp"
    assert status == 401 and f'resource_metadata="{metadata_url}"' in challenge, (status, challenge)
    assert "an API key or an OAuth access token is needed" in text
    metadata = json.load(urllib.request.urlopen(metadata_url, timeout=5))
    assert metadata["resource"] == f"{hosted.url}/mcp"
    assert metadata["authorization_servers"] == [issuer.url]
    assert metadata["scopes_supported"] == SCOPES.split()
    assert json.load(urllib.request.urlopen(f"{hosted.url}/.well-known/oauth-protected-resource", timeout=5)) == metadata

    storage, browser = Memory(), Browser()
    auth = OAuthClientProvider(
        server_url=f"{hosted.url}/mcp",
        client_metadata=OAuthClientMetadata(client_name="e2e", redirect_uris=[REDIRECT],
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"]),
        storage=storage, redirect_handler=browser.open, callback_handler=browser.back)

    async def go():
        transport = streamable_http_client(f"{hosted.url}/mcp", http_client=create_mcp_http_client(auth=auth))
        async with Client(transport, mode=era) as c:
            ok, wrote = sdk_result(await c.call_tool("write_file", {"agent_id": "alice", "path": "plan.md", "content": "step 1\n"}))
            assert ok and wrote["version"] == 1, wrote
            ok, read = sdk_result(await c.call_tool("read_file", {"agent_id": "alice", "path": "plan.md"}))
            assert ok and read["content"] == "step 1\n"
            ok, e = sdk_result(await c.call_tool("read_file", {"agent_id": "bob", "path": "plan.md"}))
            assert not ok and e == 'this token ("alice") acts for agent alice; it cannot act for agent "bob"', e
            assert [str(r.uri) for r in (await c.list_resources()).resources] == ["scratchpad://alice/plan.md"]

    asyncio.run(go())
    minted = storage.tokens.access_token
    claims = jwt.decode(minted, options={"verify_signature": False})
    assert claims["aud"] == f"{hosted.url}/mcp" and claims["iss"] == issuer.url and claims["sub"] == "alice"
    assert minted not in hosted.log_text(), "a token reached the log"
    # The API keys work beside the tokens.
    assert post(hosted, hosted.keys["rw"])[0] == 200


def test_each_bad_token_is_refused_with_the_challenge_the_spec_requires(deployment):
    issuer, hosted = deployment
    now = int(time.time())
    metadata = f'resource_metadata="{hosted.url}/.well-known/oauth-protected-resource/mcp"'
    outsider_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = issuer.keys["k1"].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    good = token(issuer, hosted)
    signature_flipped = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    cases = {
        "expired": (token(issuer, hosted, exp=now - 300), "the token has expired"),
        "not yet valid": (token(issuer, hosted, nbf=now + 300), "the token is not valid yet"),
        "wrong issuer": (token(issuer, hosted, iss="http://127.0.0.1:1"), "the token's issuer is not one this server trusts"),
        "wrong audience": (token(issuer, hosted, aud="https://elsewhere.example/mcp"),
                           f"the token is for another audience; it must be minted for {hosted.url}/mcp"),
        "bad signature": (signature_flipped, "the token's signature does not verify"),
        "a key not in the JWKS": (token(issuer, hosted, kid="gone", key=outsider_key),
                                  "the token's signing key is not among its issuer's keys"),
        "a key that says it is the issuer's": (token(issuer, hosted, key=outsider_key),
                                               "the token's signature does not verify"),
        "HS256 with the public key as its secret": (
            hs256({"iss": issuer.url, "sub": "alice", "aud": f"{hosted.url}/mcp", "exp": now + 300,
                   "scope": SCOPES}, public_pem),
            "the token is signed with HS256, which this server does not accept"),
        "alg none": (jwt.encode({"iss": issuer.url, "sub": "alice", "aud": f"{hosted.url}/mcp", "exp": now + 300},
                                None, algorithm="none"),
                     "the token is signed with none, which this server does not accept"),
        "not a JWT": ("opaque-token-value", "the token is not a signed JWT this server can read"),
    }
    for name, (bad, why) in cases.items():
        status, challenge, text = post(hosted, bad)
        assert status == 401, (name, status, text)
        assert text.strip() == why, (name, text)
        assert metadata in challenge and 'error="invalid_token"' in challenge, (name, challenge)
        assert f'error_description="{why}"' in challenge, (name, challenge)
    # The good one passes, and none reached the log.
    assert post(hosted, good)[0] == 200
    log = hosted.log_text()
    assert not any(bad in log for bad, _ in cases.values()) and good not in log


def test_scopes_decide_what_a_token_may_do(deployment):
    issuer, hosted = deployment
    scope_error = lambda scope: f'error="insufficient_scope", scope="{scope}"'
    reader = token(issuer, hosted, scope="openid scratchpad:read")
    status, challenge, text = post(hosted, reader, tool_call("write_file", agent_id="alice", path="f", content="x"))
    assert status == 403 and scope_error("scratchpad:write") in challenge, (status, challenge)
    assert "resource_metadata=" in challenge
    assert text.strip() == 'the token ("alice") lacks the scope scratchpad:write this request needs'
    status, challenge, _ = post(hosted, reader, tool_call("summarize_file", agent_id="alice", path="f"))
    assert status == 403 and scope_error("scratchpad:summaries") in challenge
    status, challenge, _ = post(hosted, token(issuer, hosted, scope="openid"))
    assert status == 403 and scope_error("scratchpad:read") in challenge
    # With the read scope, reading is let through, and the gate still holds the agent.
    status, _, text = post(hosted, reader, tool_call("list_files", agent_id="alice"))
    assert status == 200 and '"isError":true' not in text.replace(" ", ""), text
    status, _, text = post(hosted, reader, tool_call("list_files", agent_id="bob"))
    assert status == 200 and "cannot act for agent" in text, text
    # Entra ID and Okta put scopes in an `scp` array.
    writer = token(issuer, hosted, scope=None, scp=["scratchpad:write"])
    status, _, text = post(hosted, writer, tool_call("write_file", agent_id="alice", path="f", content="x"))
    assert status == 200 and '"version":1' in text.replace(" ", ""), text


def test_rotated_keys_are_fetched_again_but_no_oftener_than_the_floor(deployment):
    issuer, hosted = deployment
    assert post(hosted, token(issuer, hosted))[0] == 200
    fetched = issuer.fetches()
    # A flood of tokens naming key ids nobody has: one more fetch at most within the floor.
    outsider = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for i in range(30):
        assert post(hosted, token(issuer, hosted, kid=f"made-up-{i}", key=outsider))[0] == 401
    assert issuer.fetches() - fetched <= 1, issuer.fetches() - fetched
    # The issuer rotates: k2 in, k1 out. A k2 token fetches the set again (past the floor)...
    old = issuer.keys["k1"]
    issuer.stop()
    issuer.start([signing_key("k2")])
    time.sleep(2.1)
    assert post(hosted, token(issuer, hosted, kid="k2"))[0] == 200
    # ...and a token signed with the key rotated out is refused.
    status, challenge, text = post(hosted, token(issuer, hosted, kid="k1", key=old))
    assert status == 401 and text.strip() == "the token's signing key is not among its issuer's keys", text
