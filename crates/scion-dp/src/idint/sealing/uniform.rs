//! The burst pass when the burst's entries are alike (one key, one length: the packets of
//! one flow's template): the work of [`SealBatch::run`] with the lengths, block counts and
//! masks the same for every entry, so no per-entry decisions.

use idint_wire::crypto::{cbc_mac_lanes, encrypt_blocks};
use idint_wire::idint::entry::{MAC_LEN, NONCE_LEN, NONCE_OFFSET};

use crate::burst::{BurstPacket, MAX_BURST};

use super::super::keys::VerifierKeys;
use super::{SealBatch, load_block, xor_block};

/// Bytes of an AES block.
const BLOCK: usize = 16;

impl SealBatch {
    /// Seals the `n` queued entries, which share one shape (the batch's `shape`: key, length
    /// and blocks), if each has its whole blocks readable in its packet; the number lost
    /// (none). `None`, with no
    /// packet touched, if not: [`SealBatch::run`] then seals them entry by entry.
    #[inline(always)]
    pub(super) fn run_uniform<P: BurstPacket, K: VerifierKeys>(
        &mut self,
        keys: &K,
        pkts: &mut [P],
        n: usize,
    ) -> Option<u64> {
        let SealBatch {
            jobs,
            shape: j0,
            blocks,
            ks,
            macs,
            ..
        } = self;
        let jobs = jobs.get(..n)?;
        let key = keys.key(j0.handle)?;
        let (len, nb, n_ks) = (
            usize::from(j0.len),
            usize::from(j0.n_blocks),
            usize::from(j0.n_ks),
        );
        let enc_from = NONCE_OFFSET + NONCE_LEN;
        for (i, j) in jobs.iter().enumerate() {
            let buf = pkts.get_mut(usize::from(j.slot))?.buffer();
            let at = usize::from(j.at);
            let win = buf.get(at..at + BLOCK * nb)?;
            for (s, row) in blocks.iter_mut().enumerate().take(nb) {
                row[i] = load_block(win, BLOCK * s, len - BLOCK * s);
            }
            if n_ks == 0 {
                continue;
            }
            // An encrypted entry holds its nonce (a sealed-only one may be shorter than that).
            let mut ctr = [0u8; BLOCK];
            ctr[..NONCE_LEN].copy_from_slice(buf.get(at + NONCE_OFFSET..at + enc_from)?);
            for c in 0..n_ks {
                ctr[NONCE_LEN..].copy_from_slice(&(c as u32).to_be_bytes());
                ks[i * n_ks + c] = ctr;
            }
        }
        let n_blocks = [nb as u8; MAX_BURST];
        cbc_mac_lanes(key, &blocks[..nb], &n_blocks[..n], &mut macs[..n]);
        encrypt_blocks(key, &mut ks[..n * n_ks]);
        for (i, (j, mac)) in jobs.iter().zip(macs.iter()).enumerate() {
            let buf = pkts[usize::from(j.slot)].buffer();
            let at = usize::from(j.at);
            buf[at + len - MAC_LEN..at + len].copy_from_slice(&mac[..MAC_LEN]);
            for c in 0..n_ks {
                let p = at + enc_from + BLOCK * c;
                xor_block(buf, p, &ks[i * n_ks + c], at + len - p);
            }
        }
        Some(0)
    }
}
