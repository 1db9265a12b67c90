//! Host names as OpenSSH's known_hosts holds them: the name a host is looked up by
//! (`[host]:port` off port 22), plain patterns (`*`, `?`) matched as `match_pattern` does,
//! and the host and port a bracketed token names (docs/api.md, "Host keys (known_hosts)").
//!
//! Invariants: matching is iterative, so no pattern can make it recurse; no I/O, no crypto
//! (hashed names are `sshkey`'s).

/// Default SSH port: OpenSSH writes a host on it without brackets or port.
pub const DEFAULT_PORT: u16 = 22;

/// The name OpenSSH looks a host up by: the host alone on port 22, else `[host]:port`;
/// ASCII-lowercased, as ssh lowercases the host name it connects to.
pub fn lookup_name(hostname: &str, port: u16) -> String {
    let host = hostname.to_ascii_lowercase();
    match port {
        DEFAULT_PORT => host,
        _ => format!("[{host}]:{port}"),
    }
}

/// Whether a plain token matches `name` (a `lookup_name`): `*` matches any run of
/// characters, `?` exactly one, everything else itself without case (OpenSSH
/// `match_pattern`). Iterative, so no pattern can make it recurse deeply.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let pattern = pattern.as_bytes();
    let name = name.as_bytes();
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c.eq_ignore_ascii_case(&name[n]) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((star_p, star_n)) => {
                    p = star_p + 1;
                    n = star_n + 1;
                    star = Some((star_p, star_n + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// True when a plain token holds `*` or `?` (it may match many hosts).
pub fn is_wildcard(token: &str) -> bool {
    token.contains(['*', '?'])
}

/// The host name and port a plain token names: `[h]:2222` is `("h", 2222)`, `h` is
/// `("h", 22)`. A wildcard token gives its pattern.
pub fn split_token(token: &str) -> (String, u16) {
    if let Some(rest) = token.strip_prefix('[') {
        if let Some((host, port)) = rest.rsplit_once("]:") {
            if let Ok(port) = port.parse::<u16>() {
                return (host.to_owned(), port);
            }
        }
    }
    (token.to_owned(), DEFAULT_PORT)
}

#[cfg(test)]
mod tests {
    use crate::model::host_patterns::{lookup_name, pattern_matches, split_token};

    #[test]
    fn lookup_name_brackets_every_port_but_22() {
        assert_eq!(lookup_name("Example.COM", 22), "example.com");
        assert_eq!(lookup_name("example.com", 2222), "[example.com]:2222");
        assert_eq!(lookup_name("2001:db8::1", 2200), "[2001:db8::1]:2200");
    }

    #[test]
    fn patterns_match_like_openssh() {
        assert!(pattern_matches("*.corp", "a.corp"));
        assert!(
            !pattern_matches("*.corp", "[a.corp]:2222"),
            "a port is part of the name"
        );
        assert!(pattern_matches("[*.corp]:2222", "[a.corp]:2222"));
        assert!(pattern_matches("192.0.2.?", "192.0.2.7"));
        assert!(!pattern_matches("192.0.2.?", "192.0.2.17"));
        assert!(pattern_matches("WEB", "web"));
        assert!(pattern_matches("*", "[anything]:1"));
        assert!(!pattern_matches("a*b*c", "aXbXd"));
        assert!(pattern_matches("a*b*c", "aXbXbc"));
    }

    #[test]
    fn split_token_reads_the_port_of_the_bracketed_form() {
        assert_eq!(split_token("[h]:2222"), ("h".to_owned(), 2222));
        assert_eq!(split_token("h"), ("h".to_owned(), 22));
        assert_eq!(
            split_token("[2001:db8::1]:22"),
            ("2001:db8::1".to_owned(), 22)
        );
    }
}
