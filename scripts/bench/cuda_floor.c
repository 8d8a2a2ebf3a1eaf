/* The floor of a GPU process's start (issue 44): load the driver, open device 0's primary
 * context, as cudarc does for histopipe's tools, and end. Built on the GPU machine by
 * scripts/bench/jobs.py: cc -O2 -o cuda_floor cuda_floor.c -ldl */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*init_f)(unsigned);
typedef int (*device_get_f)(int *, int);
typedef int (*retain_f)(void **, int);
typedef int (*set_current_f)(void *);
typedef int (*sync_f)(void);

int main(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { fprintf(stderr, "cuda_floor: no libcuda.so.1\n"); return 1; }
    init_f init = (init_f)dlsym(cuda, "cuInit");
    device_get_f device_get = (device_get_f)dlsym(cuda, "cuDeviceGet");
    retain_f retain = (retain_f)dlsym(cuda, "cuDevicePrimaryCtxRetain");
    set_current_f set_current = (set_current_f)dlsym(cuda, "cuCtxSetCurrent");
    sync_f sync = (sync_f)dlsym(cuda, "cuCtxSynchronize");
    int device;
    void *context;
    if (!init || !device_get || !retain || !set_current || !sync || init(0) || device_get(&device, 0) ||
        retain(&context, device) || set_current(context) || sync()) {
        fprintf(stderr, "cuda_floor: the driver failed\n");
        return 1;
    }
    return 0;
}
