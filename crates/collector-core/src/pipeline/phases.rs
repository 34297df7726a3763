//! The phases of one report between its options and its measurement: options, verifier,
//! freshness, mapping, keys, MACs (and the grace period's second try).

use super::*;

/// Phase "options": the report's main option and stack rebuilt into the reused buffer `hbh`
/// as one hop-by-hop extension (as `idint_report::idint_hbh`) and located as ID-INT.
#[inline]
pub(super) fn rebuild_options<'b>(
    hbh: &'b mut Vec<u8>,
    m: &[u8],
    s: &[u8],
) -> Result<IdInt<&'b mut [u8]>, Reject> {
    let total = 2 + m.len() + s.len();
    if m.len() % 4 != 2 || !s.len().is_multiple_of(4) || total > idint_wire::ext::MAX_LEN {
        return Err(reject(
            RejectReason::MalformedOptions,
            "option lengths are not a main option and stack",
        ));
    }
    hbh.clear();
    hbh.push(0);
    hbh.push((total / 4 - 1) as u8);
    hbh.extend_from_slice(m);
    hbh.extend_from_slice(s);
    match IdInt::locate(&mut hbh[..]) {
        Ok(Some(v)) if v.main_offset() == 2 && v.stack_range().end == total => Ok(v),
        Ok(_) => Err(reject(
            RejectReason::MalformedOptions,
            "not an ID-INT main option and stack",
        )),
        Err(e) => Err(reject(
            RejectReason::MalformedOptions,
            format!("ID-INT options: {e}"),
        )),
    }
}

/// Phase "verifier": only reports this collector (the key resolver's AS and host) is the
/// verifier of are taken.
#[inline]
pub(super) fn check_verifier(
    keys: &KeyResolver,
    verifier: Verifier,
    (src, src_host): (IsdAsn, HostAddr),
    (dst, dst_host): (IsdAsn, Option<(u32, &[u8])>),
) -> Result<(), Reject> {
    let (lia, lhost) = (keys.local_ia(), keys.host());
    let ours = match verifier {
        Verifier::ThirdParty { ia, host } => ia == lia && host == lhost,
        Verifier::Destination => dst == lia && host_of(dst_host)? == lhost,
        Verifier::Source => src == lia && src_host == lhost,
    };
    if !ours {
        return Err(reject(
            RejectReason::NotVerifier,
            format!("verifier is {verifier:?}, not {lia} {lhost}"),
        ));
    }
    Ok(())
}

/// Phase "freshness": the report's full source timestamp, if it is fresh, not a replay and
/// not older than the replay memory (nothing is recorded yet).
#[inline]
pub(super) fn check_fresh(
    replay: &ReplayFilter,
    who: Source,
    ts48: u64,
    port: u16,
    now_ns: u64,
) -> Result<u64, Reject> {
    let full_ts = replay
        .check(who, ts48, port, now_ns)
        .map_err(replay_reject)?;
    if replay.predates_memory(full_ts) {
        return Err(reject(
            RejectReason::PredatesReplayMemory,
            format!(
                "source timestamp {full_ts} ns precedes this collector's replay memory \
                 (it may have been accepted before a restart)"
            ),
        ));
    }
    Ok(full_ts)
}

/// Phase "mapping": the report's hops to ASes — the path id, the AS per AS hop and whether
/// the path was walked over imported interfaces, or unknown.
#[inline]
pub(super) fn map_hops(
    topo: &Topology,
    src: IsdAsn,
    dst: IsdAsn,
    layout: &HopLayout,
) -> Result<Mapped, Reject> {
    let (id, ases, walked) = match topo.map(src, dst, layout) {
        Mapping::Known { id, ases } => (id, ases, false),
        Mapping::Walked { id, ases } => (id, ases, true),
        Mapping::Unknown { id } => return Ok(Mapped::Unknown { id }),
    };
    // One AS per AS hop, or the per-hop lookups below would read past the path.
    if ases.len() != layout.as_hops {
        return Err(reject(
            RejectReason::BadPath,
            format!(
                "path {id:016x} has {} AS hops, the report's path {}",
                ases.len(),
                layout.as_hops
            ),
        ));
    }
    Ok(Mapped::Path { id, ases, walked })
}

/// Verifies the source entry alone (the hop entries of a path that maps to no ASes cannot
/// be: their keys are unknown).
pub(super) fn verify_source_entry(
    idint: &mut IdInt<&mut [u8]>,
    source_key: &Aes128Enc,
) -> Result<(), Reject> {
    match verify_stack_with(idint, source_key, |_, _| None, |_, _| {}) {
        Ok(_) | Err(VerifyError::MissingKey { index: 1.. }) => Ok(()),
        Err(e) => Err(verify_reject(e)),
    }
}

/// Phase "keys": the source's key and the path's hop keys of the epoch holding `time_s`,
/// fetched into the resolver's caches if needed.
#[inline]
pub(super) fn resolve_keys<'k>(
    keys: &'k mut KeyResolver,
    (source, src, src_host): (u64, IsdAsn, HostAddr),
    (path_id, ases): (u64, &[IsdAsn]),
    time_s: u64,
) -> Result<(&'k Aes128Enc, &'k [Aes128Enc]), Reject> {
    keys.source_key(source, src, src_host, time_s)
        .map_err(|e| {
            let detail = format!("{src} {src_host}: {e:?}");
            key_reject(RejectReason::NoSourceKey, e, detail)
        })?;
    keys.path_keys(path_id, ases, time_s).map_err(|e| {
        let detail = format!("{e:?}");
        key_reject(RejectReason::NoHopKey, e, detail)
    })?;
    keys.cached(source, path_id)
        .ok_or_else(|| reject(RejectReason::NoHopKey, "keys not cached"))
}

/// Phase "MACs": verifies (and decrypts) the stack with these keys; entries are decoded into
/// `entries` as they verify (one walk of the stack). The first decoding error is returned
/// beside the verification result: it is reported only after the MACs, the instructions and
/// the replay record.
#[inline]
pub(super) fn verify_and_decode(
    idint: &mut IdInt<&mut [u8]>,
    (source_key, hop_keys): (&Aes128Enc, &[Aes128Enc]),
    layout: &HopLayout,
    instructions: &[idint_wire::idint::Instruction; 4],
    entries: &mut Vec<DecodedEntry>,
) -> (Result<usize, VerifyError>, Option<DecodeError>) {
    let (hop_of, nhf) = (&layout.hop_of, layout.hop_fields);
    entries.clear();
    let mut decode_error = None;
    let verified = verify_stack_with(
        idint,
        source_key,
        |_, e| {
            let j = usize::from(e.hop());
            (j < nhf)
                .then(|| hop_keys.get(usize::from(hop_of[j])))
                .flatten()
        },
        |index, e| {
            if decode_error.is_none() {
                match decode_entry(index, e, instructions) {
                    Ok(d) => entries.push(d),
                    Err(err) => decode_error = Some(err),
                }
            }
        },
    );
    (verified, decode_error)
}

/// The time of a report: the sink's receive time if it lies within the replay window of
/// the collector's clock (`now - window ..= now + skew`), else (absent, or off: it is not
/// covered by any MAC) the collector's own clock. A receive time far ahead would otherwise
/// pin the current values until then and pick another key epoch.
pub(super) fn report_time((window, skew): (u64, u64), receive_ns: u64, now_ns: u64) -> u64 {
    let plausible = receive_ns != 0
        && receive_ns <= now_ns.saturating_add(skew)
        && receive_ns >= now_ns.saturating_sub(window);
    if plausible { receive_ns } else { now_ns }
}

impl Pipeline {
    /// Verifies the options again after entry `failed` had a bad MAC under the keys of
    /// `time_s`'s epoch, when `time_s` lies within [`GRACE_PERIOD`] of that epoch's start:
    /// each failing entry is tried with the previous epoch's key (an entry's MAC depends only
    /// on its own key and the on-wire MAC below it), until the stack verifies or an entry
    /// fails under both. On success the main option's instructions are checked and the first
    /// decoding error of the entries is returned.
    pub(super) fn verify_in_grace(
        &mut self,
        (main_option, stack): (&[u8], &[u8]),
        (source, src, src_host): (u64, IsdAsn, HostAddr),
        (path_id, ases, layout): (u64, &[IsdAsn], &HopLayout),
        time_s: u64,
        failed: usize,
    ) -> Result<Option<DecodeError>, Reject> {
        let bad = |index| verify_reject(VerifyError::BadMac { index });
        let prev_s = time_s.saturating_sub(u64::from(GRACE_PERIOD));
        // Both epochs' keys, copied (the cache holds one epoch per source and path).
        let keys = |k: &mut KeyResolver, t: u64| -> Option<(Aes128Enc, Vec<Aes128Enc>)> {
            let s = k.source_key(source, src, src_host, t).ok()?.clone();
            let h = k.path_keys(path_id, ases, t).ok()?.to_vec();
            Some((s, h))
        };
        let (Some(now), Some(prev)) = (keys(&mut self.keys, time_s), keys(&mut self.keys, prev_s))
        else {
            return Err(bad(failed));
        };
        // Not within a grace period: the previous second's keys are the same.
        let fp = |k: &Aes128Enc| cbc_mac(k, &[0; 16]);
        let same =
            fp(&now.0) == fp(&prev.0) && now.1.iter().zip(&prev.1).all(|(a, b)| fp(a) == fp(b));
        if same {
            return Err(bad(failed));
        }
        let (hop_of, nhf) = (&layout.hop_of, layout.hop_fields);
        // Entry `i` takes the previous epoch's key if bit `i` is set (entries past 127 never).
        let mut previous = 1u128.checked_shl(failed as u32).unwrap_or(0);
        loop {
            // The options again, as received (a verification decrypts them in place).
            self.hbh.truncate(2);
            self.hbh.extend_from_slice(main_option);
            self.hbh.extend_from_slice(stack);
            let Ok(Some(mut idint)) = IdInt::locate(&mut self.hbh[..]) else {
                return Err(bad(failed));
            };
            let instructions = idint.main().instructions();
            let entries = &mut self.entries;
            entries.clear();
            let mut decode_error = None;
            let key_set = |i: usize| {
                if (previous >> i.min(127)) & 1 == 1 {
                    &prev
                } else {
                    &now
                }
            };
            let result = verify_stack_with(
                &mut idint,
                &key_set(0).0,
                |i, e| {
                    let j = usize::from(e.hop());
                    (j < nhf)
                        .then(|| key_set(i).1.get(usize::from(hop_of[j])))
                        .flatten()
                },
                |index, e| {
                    if decode_error.is_none() {
                        match decode_entry(index, e, &instructions) {
                            Ok(d) => entries.push(d),
                            Err(err) => decode_error = Some(err),
                        }
                    }
                },
            );
            match result {
                Ok(_) => {
                    check_instructions(&idint.main()).map_err(decode_reject)?;
                    self.shared.counters.grace_accepted.fetch_add(1, Relaxed);
                    return Ok(decode_error);
                }
                Err(VerifyError::BadMac { index })
                    if index < 128 && (previous >> index) & 1 == 0 =>
                {
                    previous |= 1 << index;
                }
                Err(e) => return Err(verify_reject(e)),
            }
        }
    }
}
