/* The few CUDA driver API entry points the sealed timer uses, resolved from libcuda.so.1 at run
 * time: no CUDA headers or toolkit are needed to build the extension. */
#ifndef NVFP4_CUDA_DRIVER_H
#define NVFP4_CUDA_DRIVER_H
#include <stddef.h>

typedef int CUresult;
typedef void *CUcontext, *CUstream, *CUevent, *CUmodule, *CUfunction, *CUgraph, *CUgraphExec;
typedef unsigned long long CUdeviceptr, CUmemGenericAllocationHandle;
typedef int CUdevice;
#define CU_EVENT_DEFAULT 0
#define CU_LIMIT_PERSISTING_L2_CACHE_SIZE 0x06
#define CU_STREAM_DEFAULT 0x0
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_STREAM_CAPTURE_MODE_RELAXED 2
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR 39
#define CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR 0x1
#define CU_MEM_LOCATION_TYPE_DEVICE 0x1
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE 0x3
typedef struct { int type, id; } CUmemLocation;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;  /* flags: CUmemAccess_flags, an enum */

/* A page of its own (page-aligned, page-sized): made read-only and sealed once the core is set up
 * (core_pages.c seal_core), so that native code cannot swap an entry for its own function. Where the
 * system's pages are larger than this, the table stays writable (reported). */
#define CORE_PAGE_BYTES 4096
typedef union {
    struct {
        CUresult (*CtxGetCurrent)(CUcontext *);
        CUresult (*CtxSetCurrent)(CUcontext);
        CUresult (*CtxSynchronize)(void);
        CUresult (*CtxSetLimit)(int, size_t);
        CUresult (*CtxGetLimit)(size_t *, int);
        CUresult (*CtxResetPersistingL2Cache)(void);
        CUresult (*StreamSynchronize)(CUstream);
        CUresult (*MemAlloc)(CUdeviceptr *, size_t);
        CUresult (*MemAllocHost)(void **, size_t);
        CUresult (*MemFreeHost)(void *);
        CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
        CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
        CUresult (*EventCreate)(CUevent *, unsigned);
        CUresult (*EventRecord)(CUevent, CUstream);
        CUresult (*EventSynchronize)(CUevent);
        CUresult (*EventQuery)(CUevent);
        CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
        CUresult (*ModuleLoadData)(CUmodule *, const void *);
        CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
        CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 CUstream, void **, void **);
        CUresult (*GetErrorString)(CUresult, const char **);
        CUresult (*StreamCreate)(CUstream *, unsigned);
        CUresult (*StreamBeginCapture)(CUstream, int);
        CUresult (*StreamEndCapture)(CUstream, CUgraph *);
        CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
        CUresult (*GraphLaunch)(CUgraphExec, CUstream);
        CUresult (*GraphExecDestroy)(CUgraphExec);
        CUresult (*GraphDestroy)(CUgraph);
        CUresult (*CtxGetDevice)(CUdevice *);
        CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
        CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
        CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
        CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
        CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
        CUresult (*MemFree)(CUdeviceptr);
        CUresult (*MemImportFromShareableHandle)(CUmemGenericAllocationHandle *, void *, int);
        CUresult (*MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
        CUresult (*MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
        CUresult (*MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
        CUresult (*MemRelease)(CUmemGenericAllocationHandle);
    };
    unsigned char page[CORE_PAGE_BYTES];
} cuda_driver;

extern cuda_driver cu;  /* filled by load_driver at init; hidden in the extension (-fvisibility=hidden) */
int load_driver(void);  /* 0, or -1 with a Python exception set */
int cuda_failed(CUresult status, const char *what);  /* 0 for success, else 1 with an exception set */
#define CU(call, what) do { if (cuda_failed((call), (what))) return NULL; } while (0)
#define CUI(call, what) do { if (cuda_failed((call), (what))) return -1; } while (0)
#endif
