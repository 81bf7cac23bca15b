//! An `LD_PRELOAD` shim for the uml backend's guest kernel (`netem/uml/guest.js` preloads it into `linux.uml`).
//!
//! Why it exists: Debian's user-mode Linux (6.1) saves and restores each guest process's FPU state with
//! `PTRACE_GETREGSET`/`PTRACE_SETREGSET(NT_X86_XSTATE)` on a buffer of a size fixed when it was built, the
//! AVX-era XSAVE layout. The host's `GETREGSET` copies at most that much, but its `SETREGSET` accepts only the
//! traced task's whole XSAVE area (`xstateregs_set` in the host's `arch/x86/kernel/fpu/regset.c`: any other size
//! is `EFAULT`). On a host whose CPU has AVX-512 or AMX the area is larger, every restore fails, and the guest
//! panics at its first process ("userspace - ptrace set fp regs failed, errno = 14"). Newer kernels size the
//! buffer from CPUID; the packaged one does not.
//!
//! What it does: it keeps, for each of UML's buffers (one per guest thread), the whole area the host returned
//! last; a `GETREGSET` fills it and hands UML its part, a `SETREGSET` writes UML's part over it and sets the whole
//! area. Every register round-trips, the AVX-512 ones included, so a guest thread gets back exactly the state it
//! had. On a host whose area fits UML's buffer it passes every call through. Every other `ptrace` request goes
//! to the C library's own `ptrace`.

use libc::{c_int, c_long, c_void, iovec, pid_t};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

const PTRACE_GETREGSET: c_int = 0x4204;
const PTRACE_SETREGSET: c_int = 0x4205;
const NT_X86_XSTATE: usize = 0x202;
/// Larger than any XSAVE area so far (with AMX's tiles, about 11 KiB); the host reports the real size.
const LARGEST_AREA: usize = 64 * 1024;

/// The whole area last read for each of UML's buffers, by the buffer's address.
fn whole_areas() -> &'static Mutex<HashMap<usize, Vec<u8>>> {
    static AREAS: OnceLock<Mutex<HashMap<usize, Vec<u8>>>> = OnceLock::new();
    AREAS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// `ptrace(request, pid, NT_X86_XSTATE, iov)` as the system call (the glibc wrapper's semantics for the regset
/// requests: 0, or -1 with errno set).
fn regset(request: c_int, pid: pid_t, area: &mut [u8]) -> Result<usize, c_long> {
    let mut iov = iovec { iov_base: area.as_mut_ptr().cast(), iov_len: area.len() };
    // SAFETY: iov points at `area`, which outlives the call; the kernel reads or writes at most iov_len bytes.
    let rc = unsafe { libc::syscall(libc::SYS_ptrace, request as c_long, pid as c_long, NT_X86_XSTATE, &mut iov) };
    if rc < 0 {
        Err(rc)
    } else {
        Ok(iov.iov_len)
    }
}

/// The traced task's whole XSAVE area, read from the host.
fn read_whole(pid: pid_t) -> Result<Vec<u8>, c_long> {
    let mut area = vec![0u8; LARGEST_AREA];
    let len = regset(PTRACE_GETREGSET, pid, &mut area)?;
    area.truncate(len);
    area.shrink_to_fit();
    Ok(area)
}

/// `GETREGSET` into UML's buffer `part`: the whole area is read, kept, and its first `part.len()` bytes copied.
pub fn get_xstate(pid: pid_t, part: &mut [u8]) -> Result<usize, c_long> {
    let Ok(mut areas) = whole_areas().try_lock() else {
        return regset(PTRACE_GETREGSET, pid, part); // re-entered from a signal handler: UML's part is all it asked
    };
    let whole = match areas.entry(part.as_ptr() as usize) {
        Entry::Occupied(kept) => {
            let whole = kept.into_mut();
            let len = regset(PTRACE_GETREGSET, pid, whole)?;
            whole.truncate(len);
            whole
        }
        Entry::Vacant(slot) => slot.insert(read_whole(pid)?),
    };
    let n = part.len().min(whole.len());
    part[..n].copy_from_slice(&whole[..n]);
    Ok(n)
}

/// `SETREGSET` from UML's buffer `part`: written over the whole area kept for it (read from the host when none is
/// kept yet, as for a new thread), and the whole area set.
pub fn set_xstate(pid: pid_t, part: &mut [u8]) -> Result<usize, c_long> {
    let mut areas = whole_areas().try_lock().ok();
    let mut unkept;
    let whole = match areas.as_mut() {
        Some(areas) => match areas.entry(part.as_ptr() as usize) {
            Entry::Occupied(kept) => kept.into_mut(),
            Entry::Vacant(slot) => slot.insert(read_whole(pid)?),
        },
        None => {
            unkept = read_whole(pid)?; // re-entered from a signal handler
            &mut unkept
        }
    };
    if whole.len() <= part.len() {
        return regset(PTRACE_SETREGSET, pid, part); // the host's area fits UML's buffer: nothing to do
    }
    whole[..part.len()].copy_from_slice(part);
    regset(PTRACE_SETREGSET, pid, whole)?;
    Ok(part.len())
}

type Ptrace = unsafe extern "C" fn(c_int, pid_t, *mut c_void, *mut c_void) -> c_long;

/// The C library's `ptrace`, for every request this shim does not handle.
fn libc_ptrace() -> Ptrace {
    static NEXT: OnceLock<usize> = OnceLock::new();
    let f = *NEXT.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT finds the definition after this library's.
        unsafe { libc::dlsym(libc::RTLD_NEXT, c"ptrace".as_ptr()) as usize }
    });
    assert!(f != 0, "rtclab-uml-xstate: the C library's ptrace not found");
    // SAFETY: the address is glibc's `long ptrace(enum __ptrace_request, ...)`, called with its four arguments.
    unsafe { std::mem::transmute::<usize, Ptrace>(f) }
}

/// The exported `ptrace`, which UML's calls reach through `LD_PRELOAD`. glibc declares it variadic; UML always
/// passes four arguments, in the same registers either way on x86-64.
///
/// # Safety
/// As the C library's `ptrace`: for the regset requests, `data` points at a valid `iovec` whose buffer is valid
/// for `iov_len` bytes.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn ptrace(request: c_int, pid: pid_t, addr: *mut c_void, data: *mut c_void) -> c_long {
    let xstate = (request == PTRACE_GETREGSET || request == PTRACE_SETREGSET) && addr as usize == NT_X86_XSTATE;
    if !xstate || data.is_null() {
        return libc_ptrace()(request, pid, addr, data);
    }
    let iov = &mut *(data as *mut iovec);
    let part = std::slice::from_raw_parts_mut(iov.iov_base as *mut u8, iov.iov_len);
    let done = if request == PTRACE_GETREGSET { get_xstate(pid, part) } else { set_xstate(pid, part) };
    match done {
        Ok(n) => {
            iov.iov_len = n;
            0
        }
        Err(rc) => rc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command};

    /// A stopped tracee: a `sleep` seized and interrupted.
    struct Tracee(Child);

    impl Tracee {
        fn start() -> Tracee {
            let child = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
            let pid = child.id() as pid_t;
            // SAFETY: plain ptrace and waitpid calls on our own child.
            unsafe {
                assert_eq!(libc::ptrace(libc::PTRACE_SEIZE, pid, 0, 0), 0, "PTRACE_SEIZE");
                assert_eq!(libc::ptrace(libc::PTRACE_INTERRUPT, pid, 0, 0), 0, "PTRACE_INTERRUPT");
                let mut status = 0;
                assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
            }
            Tracee(child)
        }
        fn pid(&self) -> pid_t {
            self.0.id() as pid_t
        }
    }

    impl Drop for Tracee {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// UML 6.1's buffer: the 512-byte legacy area, the 64-byte header and AVX's 256 bytes.
    const UML_AREA: usize = 832;

    #[test]
    fn a_truncated_set_succeeds_and_round_trips_every_register() {
        let tracee = Tracee::start();
        let whole = read_whole(tracee.pid()).expect("GETREGSET");
        let mut part = vec![0u8; UML_AREA];
        assert_eq!(get_xstate(tracee.pid(), &mut part), Ok(UML_AREA));
        assert_eq!(part[..], whole[..UML_AREA]);
        // Change an SSE register (xmm0, bytes 160..176 of the legacy area) in UML's part and set it, marking the
        // SSE component as in use in the header's XSTATE_BV (byte 512, bit 1): where it was in its initial state
        // the host would otherwise restore that state and ignore the bytes.
        part[160..176].copy_from_slice(&[0x5a; 16]);
        part[512] |= 0b10;
        assert_eq!(set_xstate(tracee.pid(), &mut part), Ok(UML_AREA));
        let after = read_whole(tracee.pid()).expect("GETREGSET after");
        assert_eq!(after[160..176], [0x5a; 16], "the change UML made is set");
        assert_eq!(after[UML_AREA..], whole[UML_AREA..], "the registers beyond UML's buffer are kept");
    }

    #[test]
    fn the_plain_system_call_refuses_a_truncated_set_where_the_area_is_larger() {
        // The reason for the shim, checked on this host: where the whole area is larger than UML's buffer, the
        // host refuses UML's own SETREGSET.
        let tracee = Tracee::start();
        let whole = read_whole(tracee.pid()).expect("GETREGSET");
        let mut part = whole[..UML_AREA.min(whole.len())].to_vec();
        let plain = regset(PTRACE_SETREGSET, tracee.pid(), &mut part);
        if whole.len() > UML_AREA {
            assert!(plain.is_err(), "a {}-byte area accepted an {UML_AREA}-byte SETREGSET", whole.len());
        } else {
            assert!(plain.is_ok());
        }
    }
}
