//! The cap on connections per peer address (docs/operations.md "Connections"), shared by the binary's
//! worker threads.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex, PoisonError};

use ipnet::IpNet;

/// The cap on connections per peer address: an IPv4 address, or an IPv6 /64 (the unit of the
/// global limiter: a single host is usually handed a whole /64). Peers in the trusted proxies
/// are exempt: they carry many clients' connections. One per server, shared by its worker
/// threads (cloning shares the counts).
///
/// A mutex'd map rather than anything cleverer: it is touched twice per connection, never per
/// request, and holds only the addresses with a connection open.
#[derive(Debug, Clone)]
pub struct PerAddress(Arc<Counts>);

#[derive(Debug)]
struct Counts {
    limit: usize,
    exempt: Vec<IpNet>,
    // std's SipHash: the keys are chosen by whoever connects.
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerAddress {
    /// At most `limit` connections per address, except from `exempt` networks.
    pub fn new(limit: usize, exempt: Vec<IpNet>) -> Self {
        Self(Arc::new(Counts {
            limit: limit.max(1),
            exempt,
            open: Mutex::new(HashMap::new()),
        }))
    }

    /// A connection from `ip`, counted until the returned guard is dropped; `None` when its
    /// address already holds `limit`. An exempt peer is let in uncounted.
    pub(super) fn admit(&self, ip: IpAddr) -> Option<AddressHeld> {
        let ip = ip.to_canonical();
        if self.0.exempt.iter().any(|net| net.contains(&ip)) {
            return Some(AddressHeld(None));
        }
        let unit = match ip {
            IpAddr::V4(_) => ip,
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        };
        let mut open = self.0.open.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(unit).or_insert(0);
        if *n >= self.0.limit {
            return None;
        }
        *n += 1;
        Some(AddressHeld(Some((self.0.clone(), unit))))
    }
}

/// One connection counted against its address (`None`: an exempt peer's, not counted).
#[derive(Debug)]
pub(super) struct AddressHeld(Option<(Arc<Counts>, IpAddr)>);

impl Drop for AddressHeld {
    fn drop(&mut self) {
        let Some((counts, unit)) = self.0.take() else {
            return;
        };
        let mut open = counts.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&unit) {
            *n -= 1;
            if *n == 0 {
                open.remove(&unit);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_address_cap_counts_ipv6_by_its_64_and_frees_on_drop() {
        let cap = PerAddress::new(1, vec!["10.0.0.0/8".parse().unwrap()]);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let first = cap.admit(ip("2001:db8:1:2::1")).unwrap();
        assert!(cap.admit(ip("2001:db8:1:2:ffff::9")).is_none(), "same /64");
        assert!(cap.admit(ip("2001:db8:1:3::1")).is_some(), "another /64");
        let v4 = cap.admit(ip("192.0.2.7")).unwrap();
        assert!(
            cap.admit(ip("::ffff:192.0.2.7")).is_none(),
            "mapped IPv4 is IPv4"
        );
        assert!(cap.admit(ip("10.1.1.1")).is_some() && cap.admit(ip("10.1.1.1")).is_some());
        drop((first, v4));
        assert!(cap.admit(ip("2001:db8:1:2::1")).is_some());
        assert!(
            cap.0.open.lock().unwrap().is_empty(),
            "no entry outlives its connections"
        );
    }
}
