//! `--threads 1` keeps every operation on one thread, those that run rayon's parallel
//! iterators themselves included: the global pool is the one the count asks for, built when it
//! is set (a process of its own, as the pool is the process's).

use rayon::prelude::*;

#[test]
fn a_count_given_is_the_global_pools() {
    histopipe_ops::parallel::set_threads(Some(1));
    assert_eq!(histopipe_ops::parallel::threads(), 1);
    // A parallel iterator outside any pool of ours runs on the global pool: one thread.
    assert_eq!(rayon::current_num_threads(), 1);
    let threads: std::collections::HashSet<_> =
        (0..1000).into_par_iter().map(|_| std::thread::current().id()).collect();
    assert_eq!(threads.len(), 1);
    assert!(histopipe_ops::range::finite_extremes(&[1.0, f32::NAN, -2.0]) == Some((-2.0, 1.0)));
}
