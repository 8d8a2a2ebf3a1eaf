// Shared by every histopipe kernel. NVRTC gets this header by name (see crates/gpu/build.rs);
// kernels include no system headers, so they compile the same on every NVRTC.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

