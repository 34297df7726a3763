//! Sealing entries: a written entry's MAC (and keystream, if encrypted) is computed at once
//! or, in a burst, deferred to [`SealBatch::run`] at the end of the burst, which runs every
//! entry's CBC-MAC and keystream interleaved.

use aes::cipher::Array;
use idint_wire::crypto::{Aes128Enc, xor_arrays};
use idint_wire::idint::Entry;
use idint_wire::idint::crypto::seal_entry;
use idint_wire::idint::entry::{NONCE_LEN, NONCE_OFFSET, flags as eflags};

use alloc::boxed::Box;

use crate::burst::{BurstPacket, MAX_BURST};

use super::keys::{KeyHandle, NO_VERIFIER, VerifierId, VerifierKeys};

mod uniform;
use super::plan::{FlowPlan, PLANS};

// The burst pass tracks its jobs in 64-bit masks.
const _: () = assert!(MAX_BURST <= 64);

/// Entries up to this length are sealed in the burst pass (router entries are at most 64).
pub(super) const BATCH_ENTRY_MAX: usize = 80;

const BATCH_BLOCKS: usize = BATCH_ENTRY_MAX / 16;

/// Keystream blocks of one batched entry (everything after the nonce: at most 80 - 18 bytes).
const BATCH_KS: usize = (BATCH_ENTRY_MAX - NONCE_OFFSET - NONCE_LEN).div_ceil(16);

/// One deferred entry: where it is and its key. Its bytes stay in the packet (MAC field
/// holding the previous entry's MAC, i.e. exactly the MAC input) until the burst pass reads
/// them.
#[derive(Clone, Copy)]
struct SealJob {
    slot: u8,
    n_blocks: u8,
    n_ks: u8,
    len: u8,
    at: u16,
    handle: KeyHandle,
    /// The verifier (index in [`SealBatch::ids`]), to look the key up again should the
    /// handle have gone stale.
    id: u8,
}

impl SealJob {
    /// Gives the job `shape`'s length, blocks, key and verifier.
    #[inline(always)]
    fn reshape(&mut self, shape: &JobShape) {
        self.n_blocks = shape.n_blocks;
        self.n_ks = shape.n_ks;
        self.len = shape.len;
        self.handle = shape.handle;
        self.id = shape.id;
    }
}

/// What a deferred entry's job holds besides its place: its length and blocks, its key and
/// its verifier. A flow template keeps its entries' shape, so its packets queue only their
/// place; the jobs of a burst usually share one shape.
#[derive(Clone, Copy)]
pub(super) struct JobShape {
    handle: KeyHandle,
    len: u8,
    n_blocks: u8,
    n_ks: u8,
    /// The verifier (index in [`SealBatch::ids`]).
    id: u8,
}

impl JobShape {
    /// The shape of an entry of `len` bytes (at most [`BATCH_ENTRY_MAX`]), `encrypted` or
    /// not, sealed with the key `handle` of verifier number `id` of its burst.
    #[inline(always)]
    pub(super) fn new(len: usize, encrypted: bool, handle: KeyHandle, id: u8) -> Self {
        JobShape {
            handle,
            len: len as u8,
            n_blocks: len.div_ceil(16) as u8,
            n_ks: if encrypted {
                len.saturating_sub(NONCE_OFFSET + NONCE_LEN).div_ceil(16) as u8
            } else {
                0
            },
            id,
        }
    }

    /// Whether `other` is the same shape (a compare per queued entry: kept inline).
    #[inline(always)]
    fn same(&self, other: &Self) -> bool {
        self.handle.generation == other.handle.generation
            && self.handle.index == other.handle.index
            && [self.len, self.n_blocks, self.n_ks, self.id]
                == [other.len, other.n_blocks, other.n_ks, other.id]
    }

    /// The entry's length.
    #[inline(always)]
    pub(super) fn len(&self) -> u8 {
        self.len
    }

    /// The same shape with the key `handle` of verifier number `id`.
    #[inline(always)]
    pub(super) fn with_key(self, handle: KeyHandle, id: u8) -> Self {
        JobShape { handle, id, ..self }
    }
}

impl Default for SealJob {
    fn default() -> Self {
        SealJob {
            slot: 0,
            n_blocks: 0,
            n_ks: 0,
            len: 0,
            at: 0,
            handle: KeyHandle {
                index: 0,
                generation: 0,
            },
            id: 0,
        }
    }
}

/// The entries of a burst waiting for their MACs (and keystreams): sealed together at the end
/// of the burst, the AES chains of every entry in flight at once, whatever their keys.
pub(super) struct SealBatch {
    jobs: [SealJob; MAX_BURST],
    n: usize,
    /// The shape of every queued job while they share one (`mixed` false): the jobs then
    /// hold only their place. Once one differs, every job holds its own shape.
    shape: JobShape,
    mixed: bool,
    /// The verifier of the last deferred entry and its key: consecutive packets of a flow
    /// skip the key lookup.
    pub(super) last: Option<(VerifierId, KeyHandle)>,
    /// The plans of the last fast pushes with different requests or roles, for the next
    /// packets of their flows (packets of a few flows interleave in a burst), kept from burst
    /// to burst and for single packets: a plan's key is looked up again whenever the time
    /// differs from when it was found.
    pub(super) plans: [Option<FlowPlan>; PLANS],
    /// Number of the current burst (the verifier table `ids` belongs to it).
    pub(super) burst: u64,
    /// Where the next new plan goes (round robin).
    pub(super) next_plan: usize,
    /// The verifiers of the burst's jobs (consecutive jobs of a verifier share an entry).
    pub(super) ids: [VerifierId; MAX_BURST],
    pub(super) n_ids: usize,
    now_ns: u64,
    /// Scratch of the burst pass, kept here so that it is not zeroed per burst (only what a
    /// burst writes is read): the MAC input blocks (block `s` of entry `i` at `[s][i]`) and
    /// the keystream blocks.
    blocks: [[[u8; 16]; MAX_BURST]; BATCH_BLOCKS],
    ks: [[u8; 16]; MAX_BURST * BATCH_KS],
    macs: [[u8; 16]; MAX_BURST],
}

impl core::fmt::Debug for SealBatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SealBatch")
            .field("pending", &self.n)
            .finish_non_exhaustive()
    }
}

/// `KEEP_MASK[k]`: `k` bytes of ones, then zeros.
const KEEP_MASK: [[u8; 16]; 17] = {
    let mut t = [[0u8; 16]; 17];
    let mut k = 0;
    while k <= 16 {
        let mut b = 0;
        while b < k {
            t[k][b] = 0xff;
            b += 1;
        }
        k += 1;
    }
    t
};

/// `bytes[at..at + 16]` with only its first `keep` bytes (the rest zero), read with one
/// 16-byte load when the buffer allows. Blocks stay byte arrays: as `u128` they went through
/// general registers and were stored in halves that the AES loads then could not forward.
#[inline(always)]
fn load_block(bytes: &[u8], at: usize, keep: usize) -> [u8; 16] {
    let mask = &KEEP_MASK[keep.min(16)];
    match bytes
        .get(at..at + 16)
        .and_then(|b| <&[u8; 16]>::try_from(b).ok())
    {
        Some(b) => {
            let mut out = [0u8; 16];
            for ((o, b), m) in out.iter_mut().zip(b).zip(mask) {
                *o = b & m;
            }
            out
        }
        None => {
            let mut b = [0u8; 16];
            for (k, d) in b.iter_mut().enumerate().take(keep) {
                *d = bytes.get(at + k).copied().unwrap_or(0);
            }
            b
        }
    }
}

/// XORs the first `keep` bytes of `x` into `bytes[at..]` (one 16-byte read-modify-write
/// when the buffer allows: the bytes past `keep` are XORed with zero).
#[inline(always)]
fn xor_block(bytes: &mut [u8], at: usize, x: &[u8; 16], keep: usize) {
    let mask = &KEEP_MASK[keep.min(16)];
    if let Some(b) = bytes
        .get_mut(at..at + 16)
        .and_then(|b| <&mut [u8; 16]>::try_from(b).ok())
    {
        let v = u128::from_le_bytes(*b) ^ (u128::from_le_bytes(*x) & u128::from_le_bytes(*mask));
        *b = v.to_le_bytes();
        return;
    }
    for (k, x) in x.iter().enumerate().take(keep) {
        if let Some(d) = bytes.get_mut(at + k) {
            *d ^= x;
        }
    }
}

impl SealBatch {
    pub(super) fn new() -> Box<Self> {
        Box::new(SealBatch {
            jobs: [SealJob::default(); MAX_BURST],
            n: 0,
            shape: JobShape::new(0, false, SealJob::default().handle, 0),
            mixed: false,
            last: None,
            plans: [None; PLANS],
            burst: 0,
            next_plan: 0,
            ids: [NO_VERIFIER; MAX_BURST],
            n_ids: 0,
            now_ns: 0,
            blocks: [[[0; 16]; MAX_BURST]; BATCH_BLOCKS],
            ks: [[0; 16]; MAX_BURST * BATCH_KS],
            macs: [[0; 16]; MAX_BURST],
        })
    }

    /// The key handle of verifier `id` if the previous deferred entry of this burst had it.
    #[inline]
    pub(super) fn recall(&self, id: &VerifierId) -> Option<KeyHandle> {
        match self.last {
            Some((v, h)) if v == *id => Some(h),
            _ => None,
        }
    }

    /// Queues the entry `e` (burst slot `slot`, described by `job`, its MAC field holding the
    /// previous MAC); false if it must be sealed now (too long, batch full).
    #[inline(always)]
    fn defer(&mut self, slot: u8, e: &[u8], job: &Seal) -> bool {
        let len = e.len();
        let at = job.at;
        if len > BATCH_ENTRY_MAX || self.n == MAX_BURST || at > usize::from(u16::MAX) {
            return false;
        }
        let Some(id) = self.id_index(&job.id) else {
            return false;
        };
        self.queue(
            slot,
            at,
            len,
            e[2] & eflags::C != 0,
            job.handle,
            id,
            job.now_ns,
        )
    }

    /// The index of verifier `id` in [`Self::ids`]: the last one's if equal, else appended
    /// (`None` once the table is full: the entry is then sealed at once).
    #[inline(always)]
    fn id_index(&mut self, id: &VerifierId) -> Option<u8> {
        if let Some(k) = self.n_ids.checked_sub(1)
            && self.ids[k] == *id
        {
            return Some(k as u8);
        }
        self.push_id(id)
    }

    /// Appends verifier `id` to [`Self::ids`]; its index (`None` once the table is full).
    #[inline(always)]
    pub(super) fn push_id(&mut self, id: &VerifierId) -> Option<u8> {
        push_id(&mut self.ids, &mut self.n_ids, id)
    }

    /// Queues an entry of `len` bytes at `at` in burst slot `slot` (the caller checked it
    /// fits: `len <= BATCH_ENTRY_MAX`, a free job, `at` within 16 bits), with its key and
    /// verifier.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn queue(
        &mut self,
        slot: u8,
        at: usize,
        len: usize,
        encrypted: bool,
        handle: KeyHandle,
        id: u8,
        now_ns: u64,
    ) -> bool {
        self.queue_shaped(slot, at, &JobShape::new(len, encrypted, handle, id), now_ns)
    }

    /// Queues the entry at `at` in burst slot `slot` with `shape` (its length at most
    /// [`BATCH_ENTRY_MAX`]); false if no job is free or `at` does not fit in 16 bits.
    #[inline(always)]
    pub(super) fn queue_shaped(
        &mut self,
        slot: u8,
        at: usize,
        shape: &JobShape,
        now_ns: u64,
    ) -> bool {
        let SealBatch {
            jobs,
            n,
            shape: shared,
            mixed,
            now_ns: last_ns,
            ..
        } = self;
        let q = Queue {
            jobs,
            n,
            shared,
            mixed,
            last_ns,
        };
        q.push(slot, at, shape, now_ns)
    }

    /// [`Self::queue_shaped`] with the shape of the entries of plan number `k` (read where
    /// the plan is kept, not copied); false if there is no such plan.
    #[inline(always)]
    pub(super) fn queue_planned(&mut self, slot: u8, at: usize, k: usize, now_ns: u64) -> bool {
        let SealBatch {
            jobs,
            n,
            shape: shared,
            mixed,
            now_ns: last_ns,
            plans,
            ..
        } = self;
        let Some(Some(plan)) = plans.get(k) else {
            return false;
        };
        let q = Queue {
            jobs,
            n,
            shared,
            mixed,
            last_ns,
        };
        q.push(slot, at, &plan.job, now_ns)
    }

    /// The first `n` queued jobs stop sharing a shape: each gets the shape they shared.
    #[inline(never)]
    fn spread_shape(&mut self, n: usize) {
        spread_shape(&mut self.jobs[..n], &self.shape);
        self.mixed = true;
    }

    /// Seals every queued entry into its packet. Not inlined: once per burst, and inlined into
    /// the burst loop it made that loop's code worse (more instructions per packet).
    /// Returns how many entries could not be sealed because their key was no longer
    /// available (their MAC stays zero, so verifiers reject them).
    #[inline(never)]
    pub(super) fn run<P: BurstPacket, K: VerifierKeys>(
        &mut self,
        keys: &mut K,
        pkts: &mut [P],
    ) -> u64 {
        use aes::cipher::BlockCipherEncrypt;
        use idint_wire::crypto::{cbc_mac_lanes, encrypt_blocks};
        // The last verifier's handle is only trusted within the burst; plans keep theirs
        // with the time they were found (see `FlowPlan::found_ns`), and their indices into
        // the verifier table with the burst they belong to.
        self.last = None;
        self.burst += 1;
        let n_ids = core::mem::take(&mut self.n_ids);
        let n = core::mem::take(&mut self.n);
        if n == 0 {
            return 0;
        }
        if !self.mixed
            && let Some(lost) = self.run_uniform(keys, pkts, n)
        {
            return lost;
        }
        if !self.mixed {
            self.spread_shape(n);
        }
        let SealBatch {
            jobs,
            blocks,
            ks,
            macs,
            now_ns,
            ids,
            ..
        } = self;
        let ids = &ids[..n_ids];
        let (jobs, now_ns) = (&jobs[..n], *now_ns);
        let macs = &mut macs[..n];
        let enc_from = NONCE_OFFSET + NONCE_LEN;
        // The MAC inputs and counter blocks, read from the packets; an entry whose bytes are
        // not there (not expected) is left alone. Bit `i` of `there` / `sealed`: job `i`.
        let mut n_blocks = [0u8; MAX_BURST];
        let mut n_ks = 0;
        let mut there = 0u64;
        let h0 = jobs[0].handle;
        let mut one_key = true;
        for (i, j) in jobs.iter().enumerate() {
            one_key &= j.handle == h0;
            let Some(pkt) = pkts.get_mut(usize::from(j.slot)) else {
                continue;
            };
            let buf = pkt.buffer();
            let (at, len) = (usize::from(j.at), usize::from(j.len));
            if at + len > buf.len() {
                continue;
            }
            there |= 1 << i;
            n_blocks[i] = j.n_blocks;
            for (s, row) in blocks.iter_mut().enumerate().take(usize::from(j.n_blocks)) {
                row[i] = load_block(buf, at + 16 * s, len - 16 * s);
            }
            if j.n_ks > 0 {
                let mut nonce = [0u8; 12];
                nonce.copy_from_slice(&buf[at + NONCE_OFFSET..at + enc_from]);
                for c in 0..j.n_ks {
                    let b = &mut ks[n_ks];
                    b[..12].copy_from_slice(&nonce);
                    b[12..].copy_from_slice(&u32::from(c).to_be_bytes());
                    n_ks += 1;
                }
            }
        }
        let mut sealed = 0u64;
        {
            let keys: &K = keys;
            match keys.key(h0) {
                // The common case (the burst's entries share a verifier): every chain and
                // keystream block in one pass with the key schedule loaded once.
                Some(k) if one_key => {
                    cbc_mac_lanes(k, &blocks[..], &n_blocks, macs);
                    encrypt_blocks(k, &mut ks[..n_ks]);
                    sealed = there;
                }
                _ => {
                    // Step `s` advances every chain by one block, whatever their keys, so
                    // the AES computations of different entries overlap.
                    let mut ciphers: [Option<&Aes128Enc>; MAX_BURST] = [None; MAX_BURST];
                    for (i, j) in jobs.iter().enumerate() {
                        if there & (1 << i) != 0 {
                            ciphers[i] = keys.key(j.handle);
                            if ciphers[i].is_some() {
                                sealed |= 1 << i;
                            }
                        }
                    }
                    macs.fill([0; 16]);
                    let steps = n_blocks.iter().copied().max().unwrap_or(0);
                    for (s, row) in blocks.iter().enumerate().take(usize::from(steps)) {
                        for i in 0..n {
                            if let Some(k) = ciphers[i]
                                && s < usize::from(n_blocks[i])
                            {
                                let mut x = Array::from(xor_arrays(&macs[i], &row[i]));
                                k.encrypt_block(&mut x);
                                macs[i] = x.into();
                            }
                        }
                    }
                    let mut from = 0;
                    for (i, j) in jobs.iter().enumerate() {
                        let m = if there & (1 << i) != 0 {
                            usize::from(j.n_ks)
                        } else {
                            0
                        };
                        if let Some(k) = ciphers[i] {
                            encrypt_blocks(k, &mut ks[from..from + m]);
                        }
                        from += m;
                    }
                }
            }
        }
        // A handle that went stale within the burst (a later lookup evicted its key): look the
        // key up again and seal that entry on its own.
        let mut from = 0;
        for (i, j) in jobs
            .iter()
            .enumerate()
            .take(if sealed != there { n } else { 0 })
        {
            let here = there & (1 << i) != 0;
            let m = if here { usize::from(j.n_ks) } else { 0 };
            if here
                && sealed & (1 << i) == 0
                && let Some(id) = ids.get(usize::from(j.id))
                && let Some(k) = keys.as_host_key(id.ia(), &id.host(), now_ns)
            {
                let mut mac = [0u8; 16];
                for row in blocks.iter().take(usize::from(n_blocks[i])) {
                    let mut x = Array::from(xor_arrays(&mac, &row[i]));
                    k.encrypt_block(&mut x);
                    mac = x.into();
                }
                macs[i] = mac;
                encrypt_blocks(k, &mut ks[from..from + m]);
                sealed |= 1 << i;
            }
            from += m;
        }
        let mut lost = 0;
        let mut from = 0;
        for (i, j) in jobs.iter().enumerate() {
            if there & (1 << i) == 0 {
                continue;
            }
            let m = usize::from(j.n_ks);
            let stream = &ks[from..from + m];
            from += m;
            let Some(pkt) = pkts.get_mut(usize::from(j.slot)) else {
                continue;
            };
            let buf = pkt.buffer();
            let (at, len) = (usize::from(j.at), usize::from(j.len));
            let Some(e) = buf.get_mut(at..at + len) else {
                continue;
            };
            if sealed & (1 << i) == 0 {
                // Never leave unprotected values behind: the entry keeps its shape, carries
                // zeros and a zero MAC (verifiers reject it).
                e[NONCE_OFFSET..].fill(0);
                lost += 1;
                continue;
            }
            e[len - 4..].copy_from_slice(&macs[i][..4]);
            for (c, k) in stream.iter().enumerate() {
                let p = at + enc_from + 16 * c;
                xor_block(buf, p, k, at + len - p);
            }
        }
        lost
    }
}

/// The queue of a [`SealBatch`] (its jobs, their shared shape and the burst's time), borrowed
/// apart from the rest of the batch (the plans, whose shapes are queued).
struct Queue<'a> {
    jobs: &'a mut [SealJob; MAX_BURST],
    n: &'a mut usize,
    shared: &'a mut JobShape,
    mixed: &'a mut bool,
    last_ns: &'a mut u64,
}

impl Queue<'_> {
    /// Queues the entry at `at` in burst slot `slot` with `shape` (see
    /// [`SealBatch::queue_shaped`]).
    #[inline(always)]
    fn push(self, slot: u8, at: usize, shape: &JobShape, now_ns: u64) -> bool {
        let n = *self.n;
        if n >= MAX_BURST || at > usize::from(u16::MAX) {
            return false;
        }
        if n == 0 {
            *self.shared = *shape;
            *self.mixed = false;
        } else if !*self.mixed && !self.shared.same(shape) {
            spread_shape(&mut self.jobs[..n], self.shared);
            *self.mixed = true;
        }
        let j = &mut self.jobs[n];
        j.slot = slot;
        j.at = at as u16;
        if *self.mixed {
            j.reshape(shape);
        }
        *self.last_ns = now_ns;
        *self.n = n + 1;
        true
    }
}

/// Gives each of `jobs` the shape they shared (they stop sharing one).
#[inline(never)]
fn spread_shape(jobs: &mut [SealJob], shape: &JobShape) {
    for j in jobs.iter_mut() {
        j.reshape(shape);
    }
}

/// Appends verifier `id` to a burst's verifier table `ids` holding `n_ids` verifiers; its
/// index (`None` once the table is full).
#[inline(always)]
pub(super) fn push_id(
    ids: &mut [VerifierId; MAX_BURST],
    n_ids: &mut usize,
    id: &VerifierId,
) -> Option<u8> {
    let k = *n_ids;
    *ids.get_mut(k)? = *id;
    *n_ids = k + 1;
    Some(k as u8)
}

/// Where a written entry's MAC comes from.
pub(super) struct Seal {
    /// Burst slot, if the MAC may be deferred to the end of the burst.
    pub(super) defer: Option<u8>,
    /// Offset of the entry in the packet.
    pub(super) at: usize,
    pub(super) prev_mac: [u8; 4],
    pub(super) id: VerifierId,
    /// The verifier's key.
    pub(super) handle: KeyHandle,
    pub(super) now_ns: u64,
}

/// Queues the entry's MAC (and keystream) for the end of the burst, or seals it now. `None`
/// if its key is not available any more (not expected: it was found moments before); the
/// entry's values, nonce and MAC are then zeroed.
#[inline(always)]
pub(super) fn seal_or_defer<K: VerifierKeys>(
    keys: &mut K,
    batch: &mut SealBatch,
    e: &mut [u8],
    job: &Seal,
) -> Option<()> {
    if let Some(slot) = job.defer
        && batch.defer(slot, e, job)
    {
        return Some(());
    }
    if let Some(key) = keys.key(job.handle) {
        seal_entry(key, &mut Entry::new_unchecked(e), job.prev_mac);
        return Some(());
    }
    let Some(key) = keys.as_host_key(job.id.ia(), &job.id.host(), job.now_ns) else {
        // Never leave unprotected values behind (as the burst pass does): the entry keeps
        // its shape, carries zeros and a zero MAC, which verifiers reject.
        if let Some(rest) = e.get_mut(NONCE_OFFSET..) {
            rest.fill(0);
        }
        return None;
    };
    seal_entry(key, &mut Entry::new_unchecked(e), job.prev_mac);
    Some(())
}

impl SealBatch {
    /// Keeps `plan`: in place of the plan for the same request and roles, else of the oldest.
    #[inline(always)]
    pub(super) fn keep_plan(&mut self, plan: FlowPlan) {
        let k = match self.plans.iter().position(|p| {
            p.as_ref()
                .is_some_and(|p| p.request == plan.request && p.route == plan.route)
        }) {
            Some(k) => k,
            None => {
                let k = self.next_plan % PLANS;
                self.next_plan = k + 1;
                k
            }
        };
        self.plans[k] = Some(plan);
    }
}
