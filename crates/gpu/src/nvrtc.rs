//! Run-time compilation of the embedded kernels with NVRTC, to CUBIN for one architecture.

use std::ffi::{c_char, c_int, CString};
use std::ptr;
use std::sync::OnceLock;

use cudarc::nvrtc::sys;

use crate::kernels::{Source, HEADERS};
use crate::GpuError;

/// The options every kernel is compiled with. `--fmad=false` keeps every float multiply and add
/// separately rounded, as the CPU backends compute them, so both backends agree bit for bit.
pub const OPTIONS: &[&str] = &["--std=c++17", "--fmad=false", "-DHISTOPIPE_NVRTC=1"];

/// Whether libnvrtc can be loaded (looked up once).
pub fn is_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: it only tries to load the library, and reports whether it could.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

fn check(what: &str, r: sys::nvrtcResult) -> Result<(), GpuError> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(GpuError(format!("NVRTC {what} failed: {r:?}")))
    }
}

fn require() -> Result<(), GpuError> {
    if is_present() {
        Ok(())
    } else {
        Err(GpuError("NVRTC (libnvrtc.so.13) not found: GPU kernels cannot be compiled".into()))
    }
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32), GpuError> {
    require()?;
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: NVRTC is loaded (require); it writes the two ints it is given.
    check("version", unsafe { sys::nvrtcVersion(&mut major, &mut minor) })?;
    Ok((major, minor))
}

/// Owns an nvrtcProgram and destroys it however compilation ends.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was made by nvrtcCreateProgram (or is null, which NVRTC refuses
        // without harm) and is destroyed once, here.
        unsafe {
            sys::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

impl Program {
    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: a live program; NVRTC writes the size it is given.
        if unsafe { sys::nvrtcGetProgramLogSize(self.0, &mut size) } != sys::nvrtcResult::NVRTC_SUCCESS {
            return String::new();
        }
        let mut log = vec![0u8; size];
        // SAFETY: `log` holds the size NVRTC just gave for this program's log.
        unsafe { sys::nvrtcGetProgramLog(self.0, log.as_mut_ptr() as *mut c_char) };
        String::from_utf8_lossy(&log).trim_end_matches('\0').trim().to_owned()
    }
}

/// Compiles `source` to CUBIN for `sm_<arch>` (e.g. 90 for sm_90).
pub fn compile(source: &Source, arch: i32) -> Result<Vec<u8>, GpuError> {
    require()?;
    let c = |s: &str| {
        CString::new(s).map_err(|_| GpuError(format!("NUL byte in kernel text of {}", source.name)))
    };
    let text = c(source.text)?;
    let name = c(source.name)?;
    let header_texts = HEADERS.iter().map(|(_, t)| c(t)).collect::<Result<Vec<_>, _>>()?;
    let header_names = HEADERS.iter().map(|(n, _)| c(n)).collect::<Result<Vec<_>, _>>()?;
    let texts: Vec<*const c_char> = header_texts.iter().map(|s| s.as_ptr()).collect();
    let names: Vec<*const c_char> = header_names.iter().map(|s| s.as_ptr()).collect();
    let mut prog = Program(ptr::null_mut());
    // SAFETY: every pointer is to a NUL-terminated string that outlives the call (`text`,
    // `name`, and the HEADERS.len() entries of `texts` and `names`); NVRTC copies them.
    check("create", unsafe {
        sys::nvrtcCreateProgram(
            &mut prog.0,
            text.as_ptr(),
            name.as_ptr(),
            HEADERS.len() as c_int,
            texts.as_ptr(),
            names.as_ptr(),
        )
    })?;
    let arch_opt = format!("--gpu-architecture=sm_{arch}");
    let options: Vec<CString> =
        OPTIONS.iter().copied().chain([arch_opt.as_str()]).map(c).collect::<Result<_, _>>()?;
    let option_ptrs: Vec<*const c_char> = options.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: a live program, and option_ptrs.len() NUL-terminated options that outlive the call.
    let r = unsafe { sys::nvrtcCompileProgram(prog.0, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(GpuError(format!(
            "NVRTC could not compile {} for sm_{arch}: {r:?}\n{}",
            source.name,
            prog.log()
        )));
    }
    let mut size = 0usize;
    // SAFETY: a program compiled above; NVRTC writes the size it is given.
    check("CUBIN size", unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) })?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` holds the size NVRTC just gave for this program's CUBIN.
    check("CUBIN", unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr() as *mut c_char) })?;
    Ok(cubin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::SOURCES;

    /// Every kernel must compile for Turing, Ampere and Hopper. This test runs without a GPU (pip's
    /// nvidia-cuda-nvrtc provides libnvrtc) and fails where NVRTC is missing: scripts/test installs it.
    #[test]
    fn every_kernel_compiles_for_sm75_sm80_sm90() {
        assert!(
            is_present(),
            "libnvrtc.so.13 not found: run scripts/test, or put nvidia/cu13/lib on LD_LIBRARY_PATH"
        );
        assert!(!SOURCES.is_empty());
        for arch in [75, 80, 90] {
            for source in SOURCES {
                let cubin = compile(source, arch).unwrap_or_else(|e| panic!("{e}"));
                assert!(cubin.starts_with(b"\x7fELF"), "{} for sm_{arch} is not a CUBIN", source.name);
            }
        }
    }

    #[test]
    fn compile_errors_carry_the_log() {
        if !is_present() {
            return; // the test above reports the missing library
        }
        let bad = Source { name: "bad.cu", text: "extern \"C\" __global__ void k() { undefined_thing(); }" };
        let e = compile(&bad, 90).unwrap_err().to_string();
        assert!(e.contains("bad.cu") && e.contains("undefined_thing"), "{e}");
    }
}
