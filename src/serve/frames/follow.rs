//! Where the bytes of one direction of an HTTP/2 connection are in their frames
//! ([`Follow`]), whatever reads or writes split them.

use super::{CONTINUATION, DATA, HEADERS};

/// A frame's 9-byte head (RFC 9113 §4.1).
#[derive(Debug, Clone, Copy)]
pub(super) struct Head {
    pub(super) len: u32,
    pub(super) kind: u8,
    pub(super) flags: u8,
    pub(super) stream: u32,
}

impl Head {
    fn of(h: &[u8; 9]) -> Self {
        Self {
            len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
            kind: h[3],
            flags: h[4],
            stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
        }
    }
}

/// Where one direction's bytes are in its frames, across reads or writes that split them
/// anywhere.
#[derive(Debug)]
pub(super) struct Follow {
    /// Bytes still to come before the first frame (the client's preface).
    preface: usize,
    head: [u8; 9],
    /// Bytes of `head` come so far.
    have: usize,
    /// Payload bytes of the current frame still to come.
    left: usize,
    /// The current frame's type.
    kind: u8,
}

impl Follow {
    pub(super) fn after(preface: usize) -> Self {
        Self {
            preface,
            head: [0; 9],
            have: 0,
            left: 0,
            kind: 0,
        }
    }

    /// Goes over `bytes`, telling `frame` each frame head completed in them, until it says
    /// stop: then `Some` offset in `bytes` where that frame began (0 when it began before).
    pub(super) fn over(
        &mut self,
        bytes: &[u8],
        mut frame: impl FnMut(Head) -> bool,
    ) -> Option<usize> {
        let mut at = 0;
        while at < bytes.len() {
            let rest = bytes.len() - at;
            if self.preface > 0 || self.left > 0 {
                let skip = if self.preface > 0 {
                    &mut self.preface
                } else {
                    &mut self.left
                };
                let n = (*skip).min(rest);
                *skip -= n;
                at += n;
                continue;
            }
            let began = if self.have == 0 { at } else { 0 };
            let head = match bytes[at..].first_chunk::<9>() {
                // Whole in these bytes, as heads nearly always are: read in place.
                Some(whole) if self.have == 0 => {
                    at += 9;
                    Head::of(whole)
                }
                _ => {
                    let n = (9 - self.have).min(rest);
                    self.head[self.have..self.have + n].copy_from_slice(&bytes[at..at + n]);
                    self.have += n;
                    at += n;
                    if self.have < 9 {
                        break;
                    }
                    self.have = 0;
                    Head::of(&self.head)
                }
            };
            self.left = head.len as usize;
            self.kind = head.kind;
            if !frame(head) {
                return Some(began);
            }
        }
        None
    }

    pub(super) fn at_boundary(&self) -> bool {
        self.preface == 0 && self.have == 0 && self.left == 0
    }

    /// Bytes to the end of the current frame, as far as known (its head's, then its
    /// payload's).
    pub(super) fn to_boundary(&self) -> usize {
        if self.have > 0 {
            9 - self.have
        } else {
            self.left
        }
    }

    /// Whether the bytes to come continue an answer's frame.
    pub(super) fn in_answer(&self) -> bool {
        self.left > 0 && matches!(self.kind, DATA | HEADERS | CONTINUATION)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    const END_STREAM: u8 = 0x1;
    pub(in crate::serve) const PING: u8 = 0x6;

    /// One frame's bytes: its 9-byte head, then `payload`.
    pub(in crate::serve) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// The frames are found wherever the reads split them.
    #[test]
    fn frames_are_followed_across_any_split() {
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(0x4, 0, 0, &[]));
        bytes.extend(frame(HEADERS, 0x4, 1, &[0x82; 5]));
        bytes.extend(frame(DATA, END_STREAM, 1, &[7; 300]));
        bytes.extend(frame(PING, 0, 0, &[1; 8]));
        let want = vec![(0x4, 0), (HEADERS, 1), (DATA, 1), (PING, 0)];
        for size in 1..bytes.len() {
            let mut follow = Follow::after(PREFACE.len());
            let mut seen = Vec::new();
            for chunk in bytes.chunks(size) {
                assert_eq!(
                    follow.over(chunk, |h| {
                        seen.push((h.kind, h.stream));
                        true
                    }),
                    None
                );
            }
            assert_eq!(seen, want, "read {size} bytes at a time");
            assert!(follow.at_boundary());
        }
    }
}
