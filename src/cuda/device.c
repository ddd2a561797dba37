/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A backend's device: its context (primary or shared), set-up stream, and
 * description. */
#include "device.h"

#include <errno.h>
#include <glib.h>
#include <gmodule.h>
#include <string.h>

#include "check.h"
#include "driver.h"

int
pp_cuda_device_count(void)
{
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

static int
check_ordinal(int ordinal, char **msg)
{
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorInsufficientDriver) {
    /* The runtime says so both when the driver is old and when there is
     * none at all: which one, a user needs to know. */
    GModule *driver = g_module_open("libcuda.so.1", G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
    if (driver)
      g_module_close(driver);
    *msg = g_strdup_printf("no CUDA device: %s",
                           driver ? "the NVIDIA driver is older than this CUDA runtime needs"
                                  : "no NVIDIA driver is installed (libcuda.so.1 not found)");
    return -ENODEV;
  }
  if (err == cudaErrorNoDevice) {
    *msg = g_strdup("no CUDA device: the NVIDIA driver found none");
    return -ENODEV;
  }
  if (err != cudaSuccess || count == 0) {
    *msg = g_strdup_printf("no CUDA device: %s",
                           err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return -ENODEV;
  }
  if (ordinal < 0 || ordinal >= count) {
    *msg = g_strdup_printf("device-id is %d but there %s %d CUDA device%s", ordinal,
                           count == 1 ? "is" : "are", count, count == 1 ? "" : "s");
    return -ENODEV;
  }
  return 0;
}

int
pp_cuda_device_primary_context(int ordinal, void **context, char **msg)
{
  const pp_cuda_driver *drv = pp_cuda_driver_get();
  int rc = check_ordinal(ordinal, msg);
  if (rc < 0)
    return rc;
  if (!drv) {
    *msg = g_strdup("the CUDA driver lacks cuCtxGetCurrent/cuCtxSetCurrent");
    return -ENOSYS;
  }
  CUDA_CHECK(cudaSetDevice(ordinal));
  CUDA_CHECK(cudaFree(0)); /* makes the primary context now */
  if (drv->ctx_get_current(context) != 0 || !*context) {
    *msg = g_strdup("cannot find the device's primary CUDA context");
    return -EIO;
  }
  return 0;
}

static int
adopt_context(pp_cuda_device *d, void *context, char **msg)
{
  const pp_cuda_driver *drv = pp_cuda_driver_get();
  if (!drv) {
    *msg = g_strdup("the CUDA driver lacks cuCtxSetCurrent/cuCtxGetDevice");
    return -ENOSYS;
  }
  int device = -1;
  if (drv->ctx_set_current(context) != 0 || drv->ctx_get_device(&device) != 0) {
    *msg = g_strdup("cannot make the shared CUDA context current");
    return -EIO;
  }
  if (device != d->ordinal) {
    *msg = g_strdup_printf("the pipeline's CUDA context is on GPU %d but device-id is %d; set "
                           "device-id=%d or give the elements upstream the same device",
                           device, d->ordinal, device);
    return -ENODEV;
  }
  d->context = context;
  d->adopted = true;
  return 0;
}

static int
describe(pp_cuda_device *d, char **msg)
{
  struct cudaDeviceProp prop;
  int driver = 0, runtime = 0;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, d->ordinal));
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  char uuid[33];
  for (int i = 0; i < 16; i++)
    g_snprintf(uuid + 2 * i, 3, "%02x", (unsigned char) prop.uuid.bytes[i]);
  g_snprintf(d->identity, sizeof d->identity, "%s uuid=%s sm=%d cc=%d.%d driver=%d runtime=%d",
             prop.name, uuid, prop.multiProcessorCount, prop.major, prop.minor, driver, runtime);
  return 0;
}

int
pp_cuda_device_open(pp_cuda_device *d, int ordinal, void *context, char **msg)
{
  memset(d, 0, sizeof *d);
  d->ordinal = ordinal;
  int rc = check_ordinal(ordinal, msg);
  if (rc < 0)
    return rc;
  if (context) {
    rc = adopt_context(d, context, msg);
  } else {
    rc = pp_cuda_device_primary_context(ordinal, &d->context, msg);
  }
  if (rc < 0)
    return rc;
  CUDA_CHECK(cudaStreamCreateWithFlags(&d->setup, cudaStreamNonBlocking));
  int host_pointers = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&host_pointers, cudaDevAttrCanUseHostPointerForRegisteredMem,
                                    ordinal));
  d->host_pointers = host_pointers != 0;
  return describe(d, msg);
}

cudaError_t
pp_cuda_device_bind(const pp_cuda_device *d)
{
  if (!d->adopted)
    return cudaSetDevice(d->ordinal);
  const pp_cuda_driver *drv = pp_cuda_driver_get();
  return drv && drv->ctx_set_current(d->context) == 0 ? cudaSuccess : cudaErrorDeviceUninitialized;
}

void
pp_cuda_device_close(pp_cuda_device *d)
{
  if (d->setup) {
    pp_cuda_device_bind(d);
    cudaStreamDestroy(d->setup);
  }
  memset(d, 0, sizeof *d);
}
