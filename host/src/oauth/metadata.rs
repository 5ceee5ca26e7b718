//! What a client discovers before it has a token: the protected-resource metadata (RFC 9728)
//! and the `WWW-Authenticate` challenges that point at it (RFC 6750, the MCP authorization
//! spec).

use super::{OAuthSettings, url};
use serde_json::{Value, json};

/// Where the metadata lives: `/.well-known/oauth-protected-resource` put between the
/// resource URI's origin and its path (RFC 9728 §3.1).
pub fn metadata_url(settings: &OAuthSettings) -> String {
    let resource = url(&settings.resource).expect("checked when the settings were read");
    format!("{}{WELL_KNOWN}{}", resource.origin, resource.path)
}

/// The well-known path of protected-resource metadata.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The paths this server answers the metadata on: the well-known one with the resource's
/// path (what a client derives from the resource URI), with `/mcp` (the endpoint's own
/// path, for a client that derives it from the URL it was given), and bare.
pub fn paths(settings: &OAuthSettings) -> Vec<String> {
    let resource = url(&settings.resource).expect("checked when the settings were read");
    let mut paths = vec![
        format!("{WELL_KNOWN}{}", resource.path),
        format!("{WELL_KNOWN}/mcp"),
        WELL_KNOWN.to_owned(),
    ];
    paths.sort();
    paths.dedup();
    paths
}

/// The metadata document.
pub fn document(settings: &OAuthSettings) -> Value {
    let scopes = settings.scopes();
    json!({
        "resource": settings.resource,
        "authorization_servers": settings.authorization_servers,
        "scopes_supported": [scopes.read, scopes.write, scopes.summaries],
        "bearer_methods_supported": ["header"],
        "resource_name": "scratchpad-mcp",
    })
}

/// A 401's challenge: where the metadata is, and, for a token that was sent, why it failed
/// (`error="invalid_token"`). It names no scope, so a client asks for the metadata's
/// `scopes_supported` (the MCP spec's scope selection) rather than reading alone.
pub fn unauthorized(settings: &OAuthSettings, invalid: Option<&str>) -> String {
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", metadata_url(settings));
    if let Some(why) = invalid {
        challenge.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{}\"",
            quoted(why)
        ));
    }
    challenge
}

/// A 403's challenge: the scope to ask for (`error="insufficient_scope"`).
pub fn insufficient_scope(settings: &OAuthSettings, needed: &str) -> String {
    format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"{}\"",
        quoted(needed),
        metadata_url(settings),
        quoted(&format!("the call needs the scope {needed}"))
    )
}

/// Text safe inside a quoted header parameter: printable ASCII without `"` or `\`.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c == ' ' || c.is_ascii_graphic() => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_is_found_from_the_resource_uri_and_names_the_issuers() {
        let settings = OAuthSettings {
            resource: "https://pad.example.com/team/mcp".into(),
            ..crate::oauth::example()
        };
        assert_eq!(
            metadata_url(&settings),
            "https://pad.example.com/.well-known/oauth-protected-resource/team/mcp"
        );
        assert_eq!(
            paths(&settings),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource/team/mcp"
            ]
        );
        let doc = document(&settings);
        assert_eq!(doc["resource"], "https://pad.example.com/team/mcp");
        assert_eq!(doc["authorization_servers"][0], "https://id.example.com");
        assert_eq!(
            doc["scopes_supported"],
            json!([
                "scratchpad:read",
                "scratchpad:write",
                "scratchpad:summaries"
            ])
        );
        assert_eq!(
            unauthorized(&settings, Some("the token has \"expired\"\n")),
            "Bearer resource_metadata=\"https://pad.example.com/.well-known/oauth-protected-resource/team/mcp\", error=\"invalid_token\", error_description=\"the token has 'expired'?\""
        );
    }
}
