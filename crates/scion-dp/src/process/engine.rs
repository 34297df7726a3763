//! The [`Engine`] that runs the processing steps, and the outcomes every step may end in: SCMP
//! replies and errors (built by [`crate::reply`]) and local delivery (resolved by
//! [`crate::local`]). The steps themselves add their methods to [`Engine`] in the sibling
//! modules; this one calls none of them.

use idint_wire::scion::ScionHeader;

use crate::config::Router;
use crate::local::{self, LocalError};
use crate::outcome::{Disposition, DropReason, Ingress, ScmpReason};
use crate::reply::{self, ReplyRequest};

/// The processing steps; needs only the shared router model.
#[derive(Clone, Copy)]
pub(super) struct Engine<'r> {
    /// The router model.
    pub(super) router: &'r Router,
    /// Whether the transit fast path is tried first.
    pub(super) fast: bool,
}

impl Engine<'_> {
    /// Replaces the packet by the SCMP message `req` asks for (or says why there is none).
    #[cold]
    #[inline(never)]
    pub(super) fn reply(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        req: ReplyRequest,
    ) -> Disposition {
        match reply::build(self.router, buf, len, ingress, req) {
            Ok(n) => Disposition::Reply {
                len: n,
                scmp: req.reason,
                pointer: req.pointer,
            },
            Err(DropReason::ScmpSuppressed) => Disposition::Suppressed {
                scmp: req.reason,
                pointer: req.pointer,
            },
            Err(r) => Disposition::Drop(r),
        }
    }

    /// An SCMP error for `reason` pointing at byte `pointer` of the packet.
    #[cold]
    #[inline(never)]
    pub(super) fn error(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        reason: ScmpReason,
        pointer: u16,
    ) -> Disposition {
        let req = ReplyRequest {
            reason,
            pointer,
            ifid: 0,
            egress: 0,
        };
        self.reply(buf, len, ingress, req)
    }

    /// A traceroute reply for a router alert (slow path); anything but a traceroute request
    /// carrying an alert is dropped (D5).
    #[cold]
    #[inline(never)]
    pub(super) fn traceroute(
        &self,
        buf: &mut [u8],
        len: usize,
        ingress: Ingress,
        ifid: u16,
    ) -> Disposition {
        let req = ReplyRequest {
            reason: ScmpReason::TracerouteReply,
            pointer: 0,
            ifid,
            egress: 0,
        };
        self.reply(buf, len, ingress, req)
    }

    /// Local delivery (step 13, §2.7).
    pub(super) fn deliver(&self, buf: &mut [u8], len: usize, ingress: Ingress) -> Disposition {
        let hdr = ScionHeader::new_unchecked(&buf[..len]);
        let res = local::resolve(
            self.router,
            &buf[..len],
            hdr.dst_addr_type(),
            hdr.dst_host_bytes(),
            hdr.header_len(),
            hdr.next_header().into(),
        );
        match res {
            Ok(addr) => Disposition::Deliver { addr },
            Err(LocalError::Scmp(r)) => self.error(buf, len, ingress, r, 0),
            Err(LocalError::Drop(r)) => Disposition::Drop(r),
        }
    }
}
