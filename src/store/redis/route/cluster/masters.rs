//! The Cluster's masters by name: those serving slots, in the order a walk over every key
//! visits them, one of them looked up by name, and those that do not serve now.

use std::sync::Arc;

use fred::prelude::*;

use super::{down_error, Cluster, Node, NO_OWNER};

impl Cluster {
    /// Every master serving slots, by `host:port`, sorted.
    pub(in crate::store::redis::route) fn masters(&self) -> Vec<String> {
        let topo = self.topo.read().unwrap();
        let mut addrs: Vec<String> = topo.owners.iter().map(|n| n.addr.clone()).collect();
        addrs.sort();
        addrs
    }

    /// The master `addr`, if it serves slots now (a name none has may be a change the slot
    /// table has not seen: it is re-read); an error at once when it is down.
    pub(in crate::store::redis::route) fn master(
        self: &Arc<Self>,
        addr: &str,
    ) -> Result<Option<Arc<Node>>, Error> {
        let node = self
            .topo
            .read()
            .unwrap()
            .owners
            .iter()
            .find(|n| n.addr == addr)
            .cloned();
        if !node.as_ref().is_some_and(|n| n.usable()) {
            self.refresh();
        }
        match node {
            Some(n) if !n.usable() => Err(down_error(&n.addr)),
            node => Ok(node),
        }
    }

    /// The masters that do not serve now, with their slot ranges.
    pub(in crate::store::redis::route) fn degraded(&self) -> Vec<(String, Vec<(u16, u16)>)> {
        let topo = self.topo.read().unwrap();
        let mut out: Vec<(String, Vec<(u16, u16)>)> = Vec::new();
        let mut run: Option<(u16, u16, u16)> = None; // (owner, start, end)
        let close = |run: Option<(u16, u16, u16)>, out: &mut Vec<(String, Vec<(u16, u16)>)>| {
            if let Some((o, a, b)) = run {
                let (addr, down) = if o == NO_OWNER {
                    ("unassigned".to_owned(), true)
                } else {
                    let n = &topo.owners[o as usize];
                    (n.addr.clone(), !n.usable())
                };
                if down {
                    match out.iter_mut().find(|(x, _)| *x == addr) {
                        Some((_, r)) => r.push((a, b)),
                        None => out.push((addr, vec![(a, b)])),
                    }
                }
            }
        };
        for (slot, owner) in topo.slots.iter().enumerate() {
            let slot = slot as u16;
            run = match run {
                Some((o, a, _)) if o == *owner => Some((o, a, slot)),
                other => {
                    close(other, &mut out);
                    Some((*owner, slot, slot))
                }
            };
        }
        close(run, &mut out);
        out
    }
}
