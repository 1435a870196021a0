/* shim_cudesc.c: reads the CUDA structs some driver calls take by pointer
 * (CUlaunchConfig, CUDA_MEMCPY2D, CUDA_MEMCPY3D) into a record. Kept apart
 * from shim_driver.c, which must not see cuda.h's renaming macros. */
#include <stdint.h>

#include <cuda.h>

#include "shim.h"

void shim_desc_launch(struct cs_rec_cuda *r, uint64_t cfg)
{
    const CUlaunchConfig *c = (const CUlaunchConfig *)(uintptr_t)cfg;

    if (c == NULL)
        return;
    r->grid[0] = c->gridDimX, r->grid[1] = c->gridDimY, r->grid[2] = c->gridDimZ;
    r->block[0] = (uint16_t)c->blockDimX, r->block[1] = (uint16_t)c->blockDimY;
    r->block[2] = (uint16_t)c->blockDimZ;
    shim_rec_stream(r, (uint64_t)(uintptr_t)c->hStream);
}

/* Direction from the two memory types (host, device, array, unified). */
static void copy_types(struct cs_rec_cuda *r, unsigned st, unsigned dt, const void *sh,
                       const void *dh, uint64_t bytes)
{
    int s_host = st == CU_MEMORYTYPE_HOST, d_host = dt == CU_MEMORYTYPE_HOST;
    unsigned dir = CS_DIR_DTOD;

    if (st == CU_MEMORYTYPE_UNIFIED || dt == CU_MEMORYTYPE_UNIFIED)
        dir = CS_DIR_DEFAULT;
    else if (s_host && d_host)
        dir = CS_DIR_HTOH;
    else if (s_host)
        dir = CS_DIR_HTOD;
    else if (d_host)
        dir = CS_DIR_DTOH;
    if (dir == CS_DIR_HTOD || dir == CS_DIR_DTOH) {
        shim_rec_host(r, dir, bytes, (uint64_t)(uintptr_t)(s_host ? sh : dh));
    } else {
        r->dir = (uint8_t)dir;
        r->bytes = bytes;
    }
}

void shim_desc_copy(struct cs_rec_cuda *r, uint64_t desc, int dims)
{
    if (desc == 0)
        return;
    if (dims == 2) {
        const CUDA_MEMCPY2D *c = (const CUDA_MEMCPY2D *)(uintptr_t)desc;
        copy_types(r, c->srcMemoryType, c->dstMemoryType, c->srcHost, c->dstHost,
                   (uint64_t)c->WidthInBytes * c->Height);
    } else {
        const CUDA_MEMCPY3D *c = (const CUDA_MEMCPY3D *)(uintptr_t)desc;
        copy_types(r, c->srcMemoryType, c->dstMemoryType, c->srcHost, c->dstHost,
                   (uint64_t)c->WidthInBytes * c->Height * (c->Depth ? c->Depth : 1));
    }
}
