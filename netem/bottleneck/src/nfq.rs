//! NFQUEUE through libnetfilter_queue (FFI, the small part of its API we need). Written here rather than with the
//! `nfq` crate because we need the socket's file descriptor (for epoll), batch verdicts (one message releases
//! every packet up to an id), the kernel timestamp, and the queue flags set explicitly; see docs/bottleneck.md.

use libc::{c_int, c_uchar, c_void, timeval};
use std::io;

#[repr(C)]
struct NfqHandle {
    _p: [u8; 0],
}
#[repr(C)]
struct NfqQHandle {
    _p: [u8; 0],
}
#[repr(C)]
struct NfqData {
    _p: [u8; 0],
}
#[repr(C)]
struct NfnlHandle {
    _p: [u8; 0],
}
#[repr(C, packed)]
#[allow(dead_code)]
struct NfqnlMsgPacketHdr {
    packet_id: u32,
    hw_protocol: u16,
    hook: u8,
}

type Callback = extern "C" fn(*mut NfqQHandle, *mut c_void, *mut NfqData, *mut c_void) -> c_int;

extern "C" {
    fn nfq_open() -> *mut NfqHandle;
    fn nfq_close(h: *mut NfqHandle) -> c_int;
    fn nfq_unbind_pf(h: *mut NfqHandle, pf: u16) -> c_int;
    fn nfq_bind_pf(h: *mut NfqHandle, pf: u16) -> c_int;
    fn nfq_create_queue(h: *mut NfqHandle, num: u16, cb: Callback, data: *mut c_void) -> *mut NfqQHandle;
    fn nfq_destroy_queue(qh: *mut NfqQHandle) -> c_int;
    fn nfq_set_mode(qh: *mut NfqQHandle, mode: u8, range: u32) -> c_int;
    fn nfq_set_queue_maxlen(qh: *mut NfqQHandle, queuelen: u32) -> c_int;
    fn nfq_set_queue_flags(qh: *mut NfqQHandle, mask: u32, flags: u32) -> c_int;
    fn nfq_fd(h: *mut NfqHandle) -> c_int;
    fn nfq_nfnlh(h: *mut NfqHandle) -> *mut NfnlHandle;
    fn nfnl_rcvbufsiz(h: *const NfnlHandle, size: u32) -> u32;
    fn nfq_handle_packet(h: *mut NfqHandle, buf: *mut libc::c_char, len: c_int) -> c_int;
    fn nfq_set_verdict(qh: *mut NfqQHandle, id: u32, verdict: u32, data_len: u32, buf: *const c_uchar) -> c_int;
    fn nfq_set_verdict_batch(qh: *mut NfqQHandle, id: u32, verdict: u32) -> c_int;
    fn nfq_get_msg_packet_hdr(nfad: *mut NfqData) -> *mut NfqnlMsgPacketHdr;
    fn nfq_get_payload(nfad: *mut NfqData, data: *mut *mut c_uchar) -> c_int;
    fn nfq_get_timestamp(nfad: *mut NfqData, tv: *mut timeval) -> c_int;
}

const NFQNL_COPY_PACKET: u8 = 2;
const NFQA_CFG_F_FAIL_OPEN: u32 = 1 << 0;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
const SOL_NETLINK: c_int = 270;
const NETLINK_NO_ENOBUFS: c_int = 5;

/// A packet as the kernel handed it over.
pub struct RawPacket {
    pub id: u32,
    /// Kernel timestamp (CLOCK_REALTIME, microsecond resolution), when the kernel set one.
    pub kernel_ts_ns: Option<u64>,
    pub data: Vec<u8>,
}

pub struct Queue {
    h: *mut NfqHandle,
    qh: *mut NfqQHandle,
    fd: c_int,
    /// Filled by the callback during `receive`; boxed so its address stays fixed when `Queue` moves.
    #[allow(clippy::box_collection)]
    inbox: Box<Vec<RawPacket>>,
    buf: Vec<u8>,
}

extern "C" fn on_packet(_qh: *mut NfqQHandle, _msg: *mut c_void, nfad: *mut NfqData, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the Box<Vec<RawPacket>> registered in `Queue::open`, alive while the queue is.
    let inbox = unsafe { &mut *(data as *mut Vec<RawPacket>) };
    unsafe {
        let hdr = nfq_get_msg_packet_hdr(nfad);
        if hdr.is_null() {
            return 0;
        }
        let id = u32::from_be(std::ptr::read_unaligned(std::ptr::addr_of!((*hdr).packet_id)));
        let mut payload: *mut c_uchar = std::ptr::null_mut();
        let len = nfq_get_payload(nfad, &mut payload);
        let data = if len > 0 && !payload.is_null() {
            std::slice::from_raw_parts(payload, len as usize).to_vec()
        } else {
            Vec::new()
        };
        let mut tv = timeval { tv_sec: 0, tv_usec: 0 };
        let kernel_ts_ns = (nfq_get_timestamp(nfad, &mut tv) == 0 && tv.tv_sec > 0)
            .then(|| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000);
        inbox.push(RawPacket { id, kernel_ts_ns, data });
    }
    0
}

fn os_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// What the receive step saw besides packets.
#[derive(Default)]
pub struct ReceiveReport {
    /// The kernel reported ENOBUFS: it dropped packets it could not deliver to us.
    pub overruns: u64,
}

impl Queue {
    /// Binds queue `num`: whole packets copied, fail-open off, ENOBUFS reported, large receive buffer.
    pub fn open(num: u16, maxlen: u32, rcvbuf_bytes: u32) -> io::Result<Queue> {
        unsafe {
            let h = nfq_open();
            if h.is_null() {
                return Err(os_err(
                    "cannot open a netfilter queue handle (needs root/CAP_NET_ADMIN and the nfnetlink_queue module)",
                ));
            }
            // Older kernels need the family bound; newer ones ignore it (errors are harmless there).
            nfq_unbind_pf(h, libc::AF_INET as u16);
            nfq_bind_pf(h, libc::AF_INET as u16);
            let mut inbox: Box<Vec<RawPacket>> = Box::new(Vec::with_capacity(256));
            let qh = nfq_create_queue(h, num, on_packet, (&mut *inbox) as *mut Vec<RawPacket> as *mut c_void);
            if qh.is_null() {
                let e = os_err(&format!("cannot bind NFQUEUE queue {num} (is another process bound to it?)"));
                nfq_close(h);
                return Err(e);
            }
            let q = Queue { h, qh, fd: nfq_fd(h), inbox, buf: vec![0u8; 256 * 1024] };
            // Copy range after binding: the whole packet, since CE marking rewrites it.
            if nfq_set_mode(qh, NFQNL_COPY_PACKET, 0xffff) < 0 {
                return Err(os_err("cannot set NFQUEUE copy mode"));
            }
            if nfq_set_queue_maxlen(qh, maxlen) < 0 {
                return Err(os_err("cannot set NFQUEUE queue length"));
            }
            // Fail-open off: when we fall behind, the kernel drops rather than bypassing the bottleneck.
            if nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, 0) < 0 {
                return Err(os_err("cannot set NFQUEUE flags"));
            }
            nfnl_rcvbufsiz(nfq_nfnlh(h), rcvbuf_bytes);
            let zero: c_int = 0;
            let size = std::mem::size_of::<c_int>() as libc::socklen_t;
            if libc::setsockopt(q.fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &zero as *const c_int as *const c_void, size) < 0
            {
                return Err(os_err("cannot turn on ENOBUFS reporting"));
            }
            let flags = libc::fcntl(q.fd, libc::F_GETFL);
            libc::fcntl(q.fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            Ok(q)
        }
    }

    pub fn fd(&self) -> c_int {
        self.fd
    }

    /// The receive buffer the kernel granted (bytes).
    #[allow(dead_code)]
    pub fn rcvbuf_bytes(&self) -> usize {
        let mut v: c_int = 0;
        let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
        unsafe {
            libc::getsockopt(self.fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &mut v as *mut c_int as *mut c_void, &mut len)
        };
        v as usize
    }

    /// Reads every packet waiting on the socket (up to `max`), without blocking.
    pub fn receive(&mut self, out: &mut Vec<RawPacket>, max: usize) -> io::Result<ReceiveReport> {
        let mut report = ReceiveReport::default();
        while out.len() < max {
            let n = unsafe {
                libc::recv(self.fd, self.buf.as_mut_ptr() as *mut c_void, self.buf.len(), libc::MSG_DONTWAIT)
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) => break,
                    Some(libc::EINTR) => continue,
                    Some(libc::ENOBUFS) => {
                        report.overruns += 1;
                        continue;
                    }
                    _ => return Err(io::Error::new(e.kind(), format!("reading from NFQUEUE failed: {e}"))),
                }
            }
            unsafe { nfq_handle_packet(self.h, self.buf.as_mut_ptr() as *mut libc::c_char, n as c_int) };
            out.append(&mut self.inbox);
        }
        Ok(report)
    }

    pub fn accept(&mut self, id: u32) -> io::Result<()> {
        self.verdict(id, NF_ACCEPT, None)
    }

    pub fn accept_modified(&mut self, id: u32, data: &[u8]) -> io::Result<()> {
        self.verdict(id, NF_ACCEPT, Some(data))
    }

    pub fn drop_packet(&mut self, id: u32) -> io::Result<()> {
        self.verdict(id, NF_DROP, None)
    }

    /// Accepts every packet the kernel holds for us with an id up to `id`.
    pub fn accept_up_to(&mut self, id: u32) -> io::Result<()> {
        if unsafe { nfq_set_verdict_batch(self.qh, id, NF_ACCEPT) } < 0 {
            return Err(os_err("NFQUEUE batch verdict failed"));
        }
        Ok(())
    }

    fn verdict(&mut self, id: u32, verdict: u32, data: Option<&[u8]>) -> io::Result<()> {
        let (len, ptr) = data.map_or((0, std::ptr::null()), |d| (d.len() as u32, d.as_ptr()));
        if unsafe { nfq_set_verdict(self.qh, id, verdict, len, ptr) } < 0 {
            return Err(os_err("NFQUEUE verdict failed"));
        }
        Ok(())
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        unsafe {
            nfq_destroy_queue(self.qh);
            nfq_close(self.h);
        }
    }
}
