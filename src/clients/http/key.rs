//! Who a request comes from: the configured API client, or its address (an IPv4 address or an
//! IPv6 /64), walking `X-Forwarded-For` only from trusted proxies. The identify layer names
//! every API request's caller with it once; the global limiter charges that identity, and the
//! back-end routes use it as the caller's namespace (docs/clients.md "Who may do what").

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

use crate::clients::Client;

/// Who a request comes from, for the global limiter.
///
/// The configured API client when the request has one, otherwise the peer IP. Behind a reverse
/// proxy the peer IP is the proxy's: list it in the trusted proxies and the right-most
/// `X-Forwarded-For` hop that is not itself a trusted proxy is used instead.
#[derive(Debug, Clone, Default)]
pub struct ClientKey {
    trusted_proxies: Vec<IpNet>,
}

impl ClientKey {
    pub fn new(trusted_proxies: Vec<IpNet>) -> Self {
        Self { trusted_proxies }
    }

    /// `c:<client id>` for a configured client, else `ip:<IPv4 address or IPv6 /64>`
    /// (`ip:unknown` when the server was not given peer addresses, as in a test calling the
    /// router directly). Client ids are names the operator chose, so no key ever reaches a
    /// Redis key name.
    pub fn client(
        &self,
        caller: Option<&Client>,
        headers: &HeaderMap,
        peer: Option<IpAddr>,
    ) -> String {
        if let Some(client) = caller {
            return format!("c:{}", client.id);
        }
        match peer {
            Some(peer) => {
                let mut key = String::with_capacity(48);
                key.push_str("ip:");
                push_client_net(&mut key, self.client_ip(headers, peer.to_canonical()));
                key
            }
            None => "ip:unknown".to_owned(),
        }
    }

    fn trusted(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }

    /// The peer, or, when the peer is a trusted proxy, the right-most hop of `X-Forwarded-For`
    /// that is not a trusted proxy (everything left of it could be forged by the client).
    fn client_ip(&self, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
        if !self.trusted(peer) {
            return peer;
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            // A hop that is not an address ends the chain of trust at the last proxy.
            let Some(ip) = parse_hop(hop) else { break };
            client = ip;
            if !self.trusted(ip) {
                break;
            }
        }
        client
    }
}

/// The unit a budget belongs to: one IPv4 address, or one IPv6 /64 — a single host is usually
/// handed a whole /64, so per-address IPv6 budgets could be multiplied at will.
/// Appended to `key`, which is the one allocation of a client key: IPv4 octets are written
/// with `itoa`, since `format!` through `Display` was most of the limiter's own per-request
/// cost after its header names (callgrind).
fn push_client_net(key: &mut String, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            let mut digits = itoa::Buffer::new();
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    key.push('.');
                }
                key.push_str(digits.format(octet));
            }
        }
        IpAddr::V6(v6) => {
            use std::fmt::Write;
            let net = IpNet::new(IpAddr::V6(v6), 64).expect("64 is a valid IPv6 prefix");
            let _ = write!(key, "{}", net.trunc());
        }
    }
}

/// `192.0.2.1`, `2001:db8::1`, and the forms some proxies append with a port.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .or_else(|_| hop.parse::<SocketAddr>().map(|s| s.ip()))
        .ok()
        .map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use crate::types::testing::name;
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_str(value).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn behind(proxies: &[&str]) -> ClientKey {
        ClientKey::new(proxies.iter().map(|p| p.parse().unwrap()).collect())
    }

    #[test]
    fn a_configured_client_wins_over_the_address() {
        let k = behind(&[]);
        let web = Client {
            id: name("web"),
            limits: None,
        };
        let h = headers(&[("x-api-key", "abc~!{}"), ("x-forwarded-for", "192.0.2.9")]);
        assert_eq!(k.client(Some(&web), &h, Some(ip("10.0.0.1"))), "c:web");
        assert_eq!(k.client(None, &h, Some(ip("10.0.0.1"))), "ip:10.0.0.1");
        assert_eq!(k.client(None, &HeaderMap::new(), None), "ip:unknown");
    }

    #[test]
    fn ipv6_clients_share_a_budget_per_64() {
        let k = behind(&[]);
        let a = k.client(None, &HeaderMap::new(), Some(ip("2001:db8:1:2::1")));
        let b = k.client(None, &HeaderMap::new(), Some(ip("2001:db8:1:2:ffff::9")));
        let c = k.client(None, &HeaderMap::new(), Some(ip("2001:db8:1:3::1")));
        assert_eq!(a, "ip:2001:db8:1:2::/64");
        assert_eq!(a, b, "same /64, same budget");
        assert_ne!(a, c);
        let mapped = k.client(None, &HeaderMap::new(), Some(ip("::ffff:192.0.2.7")));
        assert_eq!(mapped, "ip:192.0.2.7", "IPv4-mapped addresses stay IPv4");
    }

    #[test]
    fn forwarded_for_is_ignored_from_untrusted_peers() {
        let k = behind(&["10.0.0.0/8"]);
        let h = headers(&[("x-forwarded-for", "192.0.2.9")]);
        assert_eq!(
            k.client(None, &h, Some(ip("198.51.100.7"))),
            "ip:198.51.100.7"
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let k = behind(&["10.0.0.0/8", "127.0.0.1/32"]);
        // The client forged the first hop; 203.0.113.5 is what our first proxy saw.
        let h = headers(&[("x-forwarded-for", "192.0.2.66, 203.0.113.5, 10.1.1.1")]);
        assert_eq!(k.client(None, &h, Some(ip("10.0.0.2"))), "ip:203.0.113.5");
        // Hops split over several header lines, with a port and IPv4-mapped IPv6.
        let h = headers(&[
            ("x-forwarded-for", "192.0.2.66"),
            ("x-forwarded-for", "[::ffff:203.0.113.6]:4711, 10.1.1.1"),
        ]);
        assert_eq!(k.client(None, &h, Some(ip("127.0.0.1"))), "ip:203.0.113.6");
        // Only trusted hops: the left-most of them.
        let h = headers(&[("x-forwarded-for", "10.9.9.9, 10.1.1.1")]);
        assert_eq!(k.client(None, &h, Some(ip("10.0.0.2"))), "ip:10.9.9.9");
        // Garbage ends the chain at the last trusted proxy.
        let h = headers(&[("x-forwarded-for", "192.0.2.1, unknown, 10.1.1.1")]);
        assert_eq!(k.client(None, &h, Some(ip("10.0.0.2"))), "ip:10.1.1.1");
        // No header: the proxy itself.
        assert_eq!(
            k.client(None, &HeaderMap::new(), Some(ip("10.0.0.2"))),
            "ip:10.0.0.2"
        );
        // IPv6 peers and hops.
        let k = behind(&["2001:db8::/32"]);
        let h = headers(&[("x-forwarded-for", "2001:db9::1")]);
        assert_eq!(
            k.client(None, &h, Some(ip("2001:db8::5"))),
            "ip:2001:db9::/64",
            "the forwarded IPv6 client, by its /64"
        );
    }
}
