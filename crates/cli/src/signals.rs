//! A tool stopped by a signal while it writes `-o` files removes their temporary files first, then
//! dies of the signal as it would have, so `make` interrupted halfway leaves no stray files beside
//! its targets. Every signal whose default is to end the process is caught so: Ctrl-C's SIGINT,
//! SIGTERM and SIGHUP, SIGQUIT, a timer's SIGALRM (`timeout -s ALRM`), SIGUSR1 and SIGUSR2, SIGVTALRM and
//! SIGPROF, and the resource limits' SIGXCPU and SIGXFSZ. A write past `ulimit -f` raises SIGXFSZ on the
//! writing thread, where it is blocked: the write then fails with EFBIG instead, an error like any
//! other (one line, exit 1, temporaries removed).

use crate::atomic;

/// Blocks the signals on this thread, so on every thread made after it, and waits for them on a
/// thread of its own. Call it before any other thread is made. A signal that is ignored (`nohup`,
/// a background job of a script) stays ignored.
#[cfg(unix)]
pub(crate) fn remove_temporaries_on_signals() {
    const SIGNALS: [libc::c_int; 11] = [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGALRM,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
    ];
    // SAFETY: plain calls on a zeroed sigset_t and sigaction, which are C structs of plain data;
    // the signal thread only waits, removes files and raises.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in SIGNALS {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0 && old.sa_sigaction != libc::SIG_IGN {
                libc::sigaddset(&mut set, signal);
            }
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let waiter = std::thread::Builder::new().name("histopipe-signals".into()).spawn(move || {
            let mut signal = 0;
            if libc::sigwait(&set, &mut signal) != 0 {
                return;
            }
            atomic::remove_all();
            libc::signal(signal, libc::SIG_DFL);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(signal);
        });
        if waiter.is_err() {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

#[cfg(not(unix))]
pub(crate) fn remove_temporaries_on_signals() {}
