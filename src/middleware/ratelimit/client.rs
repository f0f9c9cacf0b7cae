//! Who a request comes from, for the global limiter: a digest of its API key, or its address
//! (an IPv4 address or an IPv6 /64), walking `X-Forwarded-For` only from trusted proxies.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

use crate::error::ApiError;

/// Who a request comes from, for the global limiter.
///
/// `X-Api-Key` when present (1–128 visible ASCII characters, else 400), otherwise the peer IP.
/// Behind a reverse proxy the peer IP is the proxy's: list it in the trusted proxies and the
/// right-most `X-Forwarded-For` hop that is not itself a trusted proxy is used instead.
#[derive(Debug, Clone, Default)]
pub struct ClientKey {
    trusted_proxies: Vec<IpNet>,
}

/// 128-bit SipHash-2-4 with a fixed key: stable across restarts and instances, so every gateway
/// names a client's bucket the same way.
fn digest(bytes: &[u8]) -> u128 {
    use siphasher::sip128::{Hasher128, SipHasher24};
    use std::hash::Hasher;
    let mut h = SipHasher24::new_with_keys(0x6777_2d72_6c67_2d31, 0x6170_692d_6b65_7973);
    h.write(bytes);
    h.finish128().as_u128()
}

impl ClientKey {
    pub fn new(trusted_proxies: Vec<IpNet>) -> Self {
        Self { trusted_proxies }
    }

    /// `k:<digest of the api key>` or `ip:<IPv4 address or IPv6 /64>` (`ip:unknown` when the server was not given
    /// peer addresses, as in a test calling the router directly). API keys are credentials, so
    /// only a 128-bit SipHash-2-4 digest of one reaches a Redis key name: anyone who can list
    /// keys sees budgets, not keys.
    pub fn client(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<String, ApiError> {
        let mut keys = headers.get_all("x-api-key").iter();
        if let Some(key) = keys.next() {
            let bytes = key.as_bytes();
            let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
            if keys.next().is_some() || bytes.is_empty() || bytes.len() > 128 || !visible {
                return Err(ApiError::invalid(
                    "X-Api-Key must be one header of 1-128 visible ASCII characters",
                ));
            }
            return Ok(format!("k:{:032x}", digest(bytes)));
        }
        Ok(match peer {
            Some(peer) => format!(
                "ip:{}",
                client_net(self.client_ip(headers, peer.to_canonical()))
            ),
            None => "ip:unknown".to_owned(),
        })
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
fn client_net(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let net = IpNet::new(IpAddr::V6(v6), 64).expect("64 is a valid IPv6 prefix");
            net.trunc().to_string()
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
    fn api_key_wins_over_the_address() {
        let k = behind(&[]);
        let h = headers(&[("x-api-key", "abc~!{}"), ("x-forwarded-for", "192.0.2.9")]);
        let client = k.client(&h, Some(ip("10.0.0.1"))).unwrap();
        assert!(client.starts_with("k:") && client.len() == 34, "{client}");
        assert!(
            !client.contains("abc"),
            "the key itself never reaches Redis: {client}"
        );
        assert_eq!(k.client(&h, None).unwrap(), client, "stable");
        let other = headers(&[("x-api-key", "abc~!{")]);
        assert_ne!(k.client(&other, None).unwrap(), client);
        assert_eq!(
            k.client(&HeaderMap::new(), Some(ip("10.0.0.1"))).unwrap(),
            "ip:10.0.0.1"
        );
        assert_eq!(k.client(&HeaderMap::new(), None).unwrap(), "ip:unknown");
    }

    #[test]
    fn ipv6_clients_share_a_budget_per_64() {
        let k = behind(&[]);
        let a = k
            .client(&HeaderMap::new(), Some(ip("2001:db8:1:2::1")))
            .unwrap();
        let b = k
            .client(&HeaderMap::new(), Some(ip("2001:db8:1:2:ffff::9")))
            .unwrap();
        let c = k
            .client(&HeaderMap::new(), Some(ip("2001:db8:1:3::1")))
            .unwrap();
        assert_eq!(a, "ip:2001:db8:1:2::/64");
        assert_eq!(a, b, "same /64, same budget");
        assert_ne!(a, c);
        let mapped = k
            .client(&HeaderMap::new(), Some(ip("::ffff:192.0.2.7")))
            .unwrap();
        assert_eq!(mapped, "ip:192.0.2.7", "IPv4-mapped addresses stay IPv4");
    }

    #[test]
    fn malformed_api_keys_are_refused() {
        let k = behind(&[]);
        let long = "a".repeat(129);
        for bad in ["", "a b", "tab\there", long.as_str(), "caf\u{e9}"] {
            let mut h = HeaderMap::new();
            h.insert(
                "x-api-key",
                HeaderValue::from_bytes(bad.as_bytes()).unwrap(),
            );
            let err = k.client(&h, None).unwrap_err();
            assert_eq!(err.code(), "invalid_argument", "{bad:?}");
        }
        let h = headers(&[("x-api-key", "a"), ("x-api-key", "b")]);
        assert!(k.client(&h, None).is_err());
        assert!(
            k.client(&headers(&[("x-api-key", &"a".repeat(128))]), None)
                .is_ok(),
            "128 visible characters are a valid key"
        );
    }

    #[test]
    fn forwarded_for_is_ignored_from_untrusted_peers() {
        let k = behind(&["10.0.0.0/8"]);
        let h = headers(&[("x-forwarded-for", "192.0.2.9")]);
        assert_eq!(
            k.client(&h, Some(ip("198.51.100.7"))).unwrap(),
            "ip:198.51.100.7"
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let k = behind(&["10.0.0.0/8", "127.0.0.1/32"]);
        // The client forged the first hop; 203.0.113.5 is what our first proxy saw.
        let h = headers(&[("x-forwarded-for", "192.0.2.66, 203.0.113.5, 10.1.1.1")]);
        assert_eq!(
            k.client(&h, Some(ip("10.0.0.2"))).unwrap(),
            "ip:203.0.113.5"
        );
        // Hops split over several header lines, with a port and IPv4-mapped IPv6.
        let h = headers(&[
            ("x-forwarded-for", "192.0.2.66"),
            ("x-forwarded-for", "[::ffff:203.0.113.6]:4711, 10.1.1.1"),
        ]);
        assert_eq!(
            k.client(&h, Some(ip("127.0.0.1"))).unwrap(),
            "ip:203.0.113.6"
        );
        // Only trusted hops: the left-most of them.
        let h = headers(&[("x-forwarded-for", "10.9.9.9, 10.1.1.1")]);
        assert_eq!(k.client(&h, Some(ip("10.0.0.2"))).unwrap(), "ip:10.9.9.9");
        // Garbage ends the chain at the last trusted proxy.
        let h = headers(&[("x-forwarded-for", "192.0.2.1, unknown, 10.1.1.1")]);
        assert_eq!(k.client(&h, Some(ip("10.0.0.2"))).unwrap(), "ip:10.1.1.1");
        // No header: the proxy itself.
        assert_eq!(
            k.client(&HeaderMap::new(), Some(ip("10.0.0.2"))).unwrap(),
            "ip:10.0.0.2"
        );
        // IPv6 peers and hops.
        let k = behind(&["2001:db8::/32"]);
        let h = headers(&[("x-forwarded-for", "2001:db9::1")]);
        assert_eq!(
            k.client(&h, Some(ip("2001:db8::5"))).unwrap(),
            "ip:2001:db9::/64",
            "the forwarded IPv6 client, by its /64"
        );
    }
}
