/* The CUDA driver entry points of harness._sealed, resolved from libcuda.so.1 at run time. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

#include "cuda_driver.h"

cuda_driver cu __attribute__((aligned(CORE_PAGE_BYTES)));

int cuda_failed(CUresult status, const char *what) {
    if (status == 0) return 0;
    const char *text = "unknown";
    if (cu.GetErrorString) cu.GetErrorString(status, &text);
    PyErr_Format(PyExc_RuntimeError, "CUDA driver: %s failed (%d: %s)", what, status, text);
    return 1;
}

int load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) { PyErr_Format(PyExc_RuntimeError, "cannot load libcuda.so.1: %s", dlerror()); return -1; }
    struct { void **slot; const char *names[2]; } table[] = {
        {(void **)&cu.CtxGetCurrent, {"cuCtxGetCurrent", NULL}},
        {(void **)&cu.CtxSetCurrent, {"cuCtxSetCurrent", NULL}},
        {(void **)&cu.CtxSynchronize, {"cuCtxSynchronize", NULL}},
        {(void **)&cu.CtxSetLimit, {"cuCtxSetLimit", NULL}},
        {(void **)&cu.CtxGetLimit, {"cuCtxGetLimit", NULL}},
        {(void **)&cu.CtxResetPersistingL2Cache, {"cuCtxResetPersistingL2Cache", NULL}},
        {(void **)&cu.StreamSynchronize, {"cuStreamSynchronize", NULL}},
        {(void **)&cu.MemAlloc, {"cuMemAlloc_v2", NULL}},
        {(void **)&cu.MemAllocHost, {"cuMemAllocHost_v2", NULL}},
        {(void **)&cu.MemFreeHost, {"cuMemFreeHost", NULL}},
        {(void **)&cu.MemsetD8Async, {"cuMemsetD8Async", NULL}},
        {(void **)&cu.MemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2", NULL}},
        {(void **)&cu.EventCreate, {"cuEventCreate", NULL}},
        {(void **)&cu.EventRecord, {"cuEventRecord", NULL}},
        {(void **)&cu.EventSynchronize, {"cuEventSynchronize", NULL}},
        {(void **)&cu.EventQuery, {"cuEventQuery", NULL}},
        {(void **)&cu.EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}},
        {(void **)&cu.ModuleLoadData, {"cuModuleLoadData", NULL}},
        {(void **)&cu.ModuleGetFunction, {"cuModuleGetFunction", NULL}},
        {(void **)&cu.LaunchKernel, {"cuLaunchKernel", NULL}},
        {(void **)&cu.GetErrorString, {"cuGetErrorString", NULL}},
        {(void **)&cu.StreamCreate, {"cuStreamCreate", NULL}},
        {(void **)&cu.StreamBeginCapture, {"cuStreamBeginCapture_v2", "cuStreamBeginCapture"}},
        {(void **)&cu.StreamEndCapture, {"cuStreamEndCapture", NULL}},
        {(void **)&cu.GraphInstantiate, {"cuGraphInstantiateWithFlags", NULL}},
        {(void **)&cu.GraphLaunch, {"cuGraphLaunch", NULL}},
        {(void **)&cu.GraphExecDestroy, {"cuGraphExecDestroy", NULL}},
        {(void **)&cu.GraphDestroy, {"cuGraphDestroy", NULL}},
        {(void **)&cu.CtxGetDevice, {"cuCtxGetDevice", NULL}},
        {(void **)&cu.DeviceGetAttribute, {"cuDeviceGetAttribute", NULL}},
        {(void **)&cu.OccupancyMaxActiveBlocksPerMultiprocessor, {"cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL}},
        {(void **)&cu.MemcpyHtoD, {"cuMemcpyHtoD_v2", NULL}},
        {(void **)&cu.MemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2", NULL}},
        {(void **)&cu.MemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2", NULL}},
        {(void **)&cu.MemFree, {"cuMemFree_v2", NULL}},
        {(void **)&cu.MemImportFromShareableHandle, {"cuMemImportFromShareableHandle", NULL}},
        {(void **)&cu.MemAddressReserve, {"cuMemAddressReserve", NULL}},
        {(void **)&cu.MemMap, {"cuMemMap", NULL}},
        {(void **)&cu.MemSetAccess, {"cuMemSetAccess", NULL}},
        {(void **)&cu.MemRelease, {"cuMemRelease", NULL}},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        for (int j = 0; j < 2 && table[i].names[j] && !*table[i].slot; j++)
            *table[i].slot = dlsym(lib, table[i].names[j]);
        if (!*table[i].slot) {
            PyErr_Format(PyExc_RuntimeError, "libcuda.so.1 has no %s", table[i].names[0]);
            return -1;
        }
    }
    return 0;
}

