//! The small amount of URL syntax a manifest needs, checked without a URL crate.
//!
//! We only accept absolute `http`/`https` URLs and registry hosts, so a full RFC 3986 parser
//! is unnecessary: the checks below catch what a person gets wrong by hand (a missing scheme, a
//! space, a stray character, a bad port), and whatever fetches the URL catches the rest.

/// Why `url` is not an absolute `http(s)` URL, or `Ok` if it is.
pub(super) fn check_http_url(url: &str) -> Result<(), &'static str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("it does not start with `https://` or `http://`")?;
    if let Some(bad) = url.chars().find(|c| !is_url_char(*c)) {
        return Err(if bad.is_ascii() {
            "it contains a space, control or unsafe character (percent-encode it)"
        } else {
            "it contains a non-ASCII character (percent-encode it)"
        });
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Err("it has no host");
    }
    // Credentials in a manifest would end up verbatim in every bundle built from it.
    if authority.contains('@') {
        return Err("it embeds credentials");
    }
    if !is_host_port(&authority.to_ascii_lowercase()) {
        return Err("its host is not `host[:port]`");
    }
    Ok(())
}

/// Whether `text` is `host[:port]`: lowercase DNS labels, an IPv4 address, or a bracketed
/// IPv6 address, with an optional port from 1 to 65535.
pub fn is_host_port(text: &str) -> bool {
    let (host, port) = split_port(text);
    let port_ok = port.is_none_or(|port| {
        port.bytes().all(|byte| byte.is_ascii_digit()) && port.parse::<u16>().is_ok_and(|p| p > 0)
    });
    port_ok && (is_dns_name(host) || is_bracketed_ipv6(host))
}

fn split_port(text: &str) -> (&str, Option<&str>) {
    // A bracketed IPv6 address has colons of its own; only one after `]` starts the port.
    let search_from = text.find(']').unwrap_or(0);
    match text[search_from..].rfind(':') {
        Some(offset) => {
            let colon = search_from + offset;
            (&text[..colon], Some(&text[colon + 1..]))
        }
        None => (text, None),
    }
}

/// Whether `host` is DNS labels of lowercase letters, digits and inner `-` (at most 63
/// characters each, 253 in all). IPv4 addresses pass too.
pub fn is_dns_name(host: &str) -> bool {
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    host.len() <= 253 && host.split('.').all(label_ok)
}

fn is_bracketed_ipv6(host: &str) -> bool {
    host.strip_prefix('[')
        .and_then(|host| host.strip_suffix(']'))
        .and_then(|inner| inner.parse::<std::net::Ipv6Addr>().ok())
        .is_some()
}

/// Characters that may appear literally in a URL (RFC 3986 unreserved, reserved and `%`).
fn is_url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_urls() {
        for url in [
            "https://example.org/etcd-v3.5.16-linux-amd64.tar.gz",
            "http://10.0.0.1:8080/a?b=c#d",
            "https://[::1]:8443/x",
            "https://Example.ORG/x",
            "https://dl.k8s.io",
        ] {
            assert_eq!(check_http_url(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn rejects_malformed_urls() {
        let cases = [
            ("ftp://example.org/x", "does not start"),
            ("example.org/x", "does not start"),
            ("https://", "no host"),
            ("https:///x", "no host"),
            ("https://user:pw@example.org/x", "credentials"),
            ("https://exa mple.org/x", "a space"),
            ("https://example.org/a b", "a space"),
            ("https://example.org/é", "non-ASCII"),
            ("https://example.org:0/x", "host"),
            ("https://example.org:99999/x", "host"),
            ("https://-example.org/x", "host"),
            ("https://example..org/x", "host"),
            ("https://[zz]/x", "host"),
        ];
        for (url, fragment) in cases {
            let problem = check_http_url(url).expect_err(url);
            assert!(problem.contains(fragment), "{url}: {problem}");
        }
    }

    #[test]
    fn host_port_forms() {
        for good in [
            "docker.io",
            "127.0.0.1:5000",
            "[::1]:5000",
            "[fe80::1]",
            "localhost",
        ] {
            assert!(is_host_port(good), "{good}");
        }
        for bad in [
            "",
            "Docker.io",
            "docker.io:",
            "docker.io:x",
            "a/b",
            "[::1",
            "a_b.io",
        ] {
            assert!(!is_host_port(bad), "{bad}");
        }
    }
}
