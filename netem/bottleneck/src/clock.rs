//! Real time and precise waiting: CLOCK_REALTIME in nanoseconds (the clock of the captures and the log), an
//! epoll set with an absolute timerfd armed a little before the due time, the rest spun; SIGTERM/SIGINT arrive
//! through a signalfd in the same epoll set.

use std::io;

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn check(ret: i32, what: &str) -> io::Result<i32> {
    if ret < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(ret)
}

pub const TOKEN_QUEUE: u64 = 1;
pub const TOKEN_TIMER: u64 = 2;
pub const TOKEN_SIGNAL: u64 = 3;

/// What a wait saw: packets to read, a termination signal, a request to restart the rate schedule (SIGUSR1).
#[derive(Default, Clone, Copy)]
pub struct Woken {
    pub packets: bool,
    pub signalled: bool,
    pub restart_schedule: bool,
    /// SIGUSR2: read the flow delays again (--flow-delays-file).
    pub reload_flow_delays: bool,
}

pub struct Waiter {
    epfd: i32,
    timerfd: i32,
    sigfd: i32,
    armed_ns: u64,
}

fn termination_signals() -> libc::sigset_t {
    unsafe {
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGTERM);
        libc::sigaddset(&mut mask, libc::SIGINT);
        // Not a termination: "schedule time 0 is now" (the harness sends it when the call starts).
        libc::sigaddset(&mut mask, libc::SIGUSR1);
        // Nor this: "read the flow delays again" (the harness sends it once it knows each call's 5-tuple).
        libc::sigaddset(&mut mask, libc::SIGUSR2);
        mask
    }
}

/// Blocks SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 in this thread and every thread started after it: they are read from the
/// Waiter's signalfd instead. Call first thing in main, before any thread exists.
pub fn block_termination_signals() -> io::Result<()> {
    let mask = termination_signals();
    let ret = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut()) };
    if ret != 0 {
        return Err(io::Error::from_raw_os_error(ret));
    }
    Ok(())
}

impl Waiter {
    /// Watches `queue_fd`, a timer, and SIGTERM/SIGINT (blocked beforehand by `block_termination_signals`).
    pub fn new(queue_fd: i32) -> io::Result<Waiter> {
        unsafe {
            let mask = termination_signals();
            let sigfd =
                check(libc::signalfd(-1, &mask, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC), "cannot create a signalfd")?;
            let timerfd = check(
                libc::timerfd_create(libc::CLOCK_REALTIME, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC),
                "cannot create a timerfd",
            )?;
            let epfd = check(libc::epoll_create1(libc::EPOLL_CLOEXEC), "cannot create an epoll set")?;
            for (fd, token) in [(queue_fd, TOKEN_QUEUE), (timerfd, TOKEN_TIMER), (sigfd, TOKEN_SIGNAL)] {
                let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
                check(libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev), "cannot add to the epoll set")?;
            }
            Ok(Waiter { epfd, timerfd, sigfd, armed_ns: 0 })
        }
    }

    /// Arms the timer for absolute time `at_ns` (0 disarms).
    pub fn arm(&mut self, at_ns: u64) -> io::Result<()> {
        if at_ns == self.armed_ns {
            return Ok(());
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (at_ns / 1_000_000_000) as i64,
                tv_nsec: (at_ns % 1_000_000_000) as i64,
            },
        };
        check(
            unsafe { libc::timerfd_settime(self.timerfd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) },
            "cannot arm the timerfd",
        )?;
        self.armed_ns = at_ns;
        Ok(())
    }

    /// Waits for packets, the timer or a signal (`timeout_ms` -1: forever, 0: just look).
    pub fn wait(&mut self, timeout_ms: i32) -> io::Result<Woken> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
        let n = unsafe { libc::epoll_wait(self.epfd, events.as_mut_ptr(), events.len() as i32, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(Woken::default());
            }
            return Err(io::Error::new(e.kind(), format!("epoll_wait failed: {e}")));
        }
        let mut woken = Woken::default();
        for ev in &events[..n as usize] {
            match ev.u64 {
                TOKEN_QUEUE => woken.packets = true,
                TOKEN_TIMER => {
                    let mut buf = [0u8; 8];
                    unsafe { libc::read(self.timerfd, buf.as_mut_ptr() as *mut libc::c_void, 8) };
                    self.armed_ns = 0;
                }
                TOKEN_SIGNAL => loop {
                    // struct signalfd_siginfo is 128 bytes and starts with the signal number (u32).
                    let mut info = [0u8; 128];
                    let n = unsafe { libc::read(self.sigfd, info.as_mut_ptr() as *mut libc::c_void, 128) };
                    if n < 128 {
                        break;
                    }
                    let signo = u32::from_ne_bytes([info[0], info[1], info[2], info[3]]) as i32;
                    if signo == libc::SIGUSR1 {
                        woken.restart_schedule = true;
                    } else if signo == libc::SIGUSR2 {
                        woken.reload_flow_delays = true;
                    } else {
                        woken.signalled = true;
                    }
                },
                _ => {}
            }
        }
        Ok(woken)
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        unsafe {
            libc::close(self.epfd);
            libc::close(self.timerfd);
            libc::close(self.sigfd);
        }
    }
}
