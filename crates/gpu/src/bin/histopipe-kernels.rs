//! `histopipe-kernels DIR [ARCH...]`: compiles every kernel of `kernels-common/` with NVRTC for
//! each architecture (`90` for sm_90; default: every one CUDA 13 builds for, 75 to 120) into DIR,
//! under the names the tools' kernel cache looks for. `scripts/install` runs it into
//! `PREFIX/share/histopipe/kernels`, the install's own cache (see `histopipe_gpu::cache`), so that
//! no user's first GPU run waits for NVRTC. Needs NVRTC (libnvrtc), not a GPU.

use std::path::PathBuf;
use std::process::ExitCode;

use histopipe_gpu::{cache, kernels::SOURCES, nvrtc};

/// The architectures CUDA 13's NVRTC compiles for, from Turing to Blackwell.
const ARCHS: [i32; 7] = [75, 80, 86, 89, 90, 100, 120];

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().filter(|a| !a.starts_with('-')) else {
        eprintln!("usage: histopipe-kernels DIR [ARCH...] (ARCH as 90 for sm_90; default 75 to 120)");
        return ExitCode::from(2);
    };
    let archs: Result<Vec<i32>, _> = args.map(|a| a.parse::<i32>()).collect();
    let archs = match archs {
        Ok(a) if a.is_empty() => ARCHS.to_vec(),
        Ok(a) => a,
        Err(_) => {
            eprintln!("histopipe-kernels: an ARCH is a number, as 90 for sm_90");
            return ExitCode::from(2);
        }
    };
    let version = match nvrtc::version() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("histopipe-kernels: {e}");
            return ExitCode::from(1);
        }
    };
    let dir = PathBuf::from(dir);
    // One thread a core, each compiling whole architectures (NVRTC takes separate programs on
    // separate threads): about 13 s of one core an architecture.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..cores.min(archs.len()) {
            scope.spawn(|| {
                while let Some(&arch) = archs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    for source in SOURCES {
                        match nvrtc::compile(source, arch) {
                            Ok(cubin) => {
                                cache::store(&dir.join(cache::file_name(source, arch, version)), &cubin)
                            }
                            Err(e) => {
                                let mut f = failed.lock().unwrap_or_else(|e| e.into_inner());
                                f.get_or_insert(format!("{} for sm_{arch}: {e}", source.name));
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        eprintln!("histopipe-kernels: {e}");
        return ExitCode::from(1);
    }
    eprintln!(
        "histopipe-kernels: {} kernel modules for sm_{} by NVRTC {}.{} in {}",
        SOURCES.len() * archs.len(),
        archs.iter().map(i32::to_string).collect::<Vec<_>>().join(", sm_"),
        version.0,
        version.1,
        dir.display()
    );
    ExitCode::SUCCESS
}
