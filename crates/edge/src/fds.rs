//! The process's file-descriptor limit, and the connection cap derived from it.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit where allowed, and returns the soft
/// limit now in force (`None` where it cannot be read).
pub fn raise_nofile_limit() -> Option<u64> {
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
        #[allow(clippy::unnecessary_cast)] // `rlim_t` is not `u64` on every target.
        Some(lim.rlim_cur as u64)
    }
}

/// Connections served at once, from the descriptor limit: a quarter of the descriptors (at
/// least 256) stay for the database pool, outbound connections (banks, webhooks, image URLs)
/// and files; at most 10,000, since each idle connection also costs memory.
pub fn max_connections_for(nofile: Option<u64>) -> usize {
    let Some(n) = nofile else {
        return 768;
    };
    let reserve = (n / 4).max(256);
    let cap = n.saturating_sub(reserve).clamp(16, 10_000);
    usize::try_from(cap).unwrap_or(10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_headroom_under_the_descriptor_limit() {
        assert_eq!(max_connections_for(Some(1024)), 768);
        assert_eq!(max_connections_for(Some(4096)), 3072);
        assert_eq!(max_connections_for(Some(1 << 20)), 10_000);
        // A tiny limit still serves a few connections rather than none.
        assert_eq!(max_connections_for(Some(64)), 16);
        assert_eq!(max_connections_for(None), 768);
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let soft = raise_nofile_limit().expect("readable");
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: as above.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        #[allow(clippy::unnecessary_cast)]
        let cur = lim.rlim_cur as u64;
        assert_eq!(soft, cur);
        // Linux refuses an infinite soft limit for descriptors: then it stays below.
        if lim.rlim_max != libc::RLIM_INFINITY {
            assert_eq!(lim.rlim_cur, lim.rlim_max);
        }
    }
}
