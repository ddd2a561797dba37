// SPDX-License-Identifier: LGPL-2.1-or-later
/* pingpong-bench's GPU timings (bench.h): what each stage of a workload's
 * frame costs alone on one device, each path's MLP, and the same MLP in
 * plain cuBLAS. */
#include <cuda_runtime_api.h>
#include <gst/gst.h>
#include <stdio.h>

#include "bench.h"
#include "cublas_reference.h"
#include "cuda_kernels.h"
#include "reader.h"
#include "frame.h"
#include "model.h"
#include "timing.h"

gboolean
bench_time_gpu(const element_setup *e, int device, const char *plan,
               const pp_frame_layout *layout_in, pp_model *model, GstBuffer *frame, stage_times *t,
               char **msg_out)
{
  const pp_frame_layout layout = *layout_in;
  pp_backend *b = NULL;
  char *msg = NULL;
  pp_backend_options opts = {
    .kind = PP_BACKEND_CUDA,
    .device_id = device,
    .precision = PP_PRECISION_FP32,
    .completion = g_str_equal(e->completion, "event-thread") ? PP_COMPLETION_EVENT_THREAD
                                                             : PP_COMPLETION_CONSUMER,
  };
  pp_precision_parse(e->precision, &opts.precision); /* checked with the options */
  const pp_dtype dtype = pp_precision_dtype(opts.precision);
  /* The element's plan here too. */
  const pp_plan_request request = { .forced = plan };
  gboolean ok = pp_backend_cuda_new(&opts, &b, &msg) == 0 &&
                b->ops->configure(b, model, &layout, 1, &request, &msg) == 0;
  GstMapInfo map;
  gst_buffer_map(frame, &map, GST_MAP_READ);
  const size_t out_bytes = ok ? (size_t) layout.n * model->o * sizeof(float) : 0;
  float *out = ok ? pp_host_alloc(out_bytes, true, &msg) : NULL;
  ok = ok && out && pp_cuda_time_stages(b, map.data, out, 31, &t->stages, &msg) == 0 &&
       pp_cuda_time_paths(b, 31, t->paths, PP_CUDA_MAX_PATH_TIMES, &t->n_paths, &msg) == 0;

  /* Plain cuBLAS on the same frame, weights and precision. */
  if (ok) {
    cudaStream_t stream;
    cublasHandle_t blas;
    cudaEvent_t start, stop;
    int32_t *h_koff = g_new(int32_t, layout.k), *d_koff = NULL;
    void *d_frame;
    float *d_w[2 * PP_MAX_LAYERS] = { NULL }, *y;
    void *d_w16[PP_MAX_LAYERS] = { NULL }, *x_scratch, *h_scratch[2] = { NULL };
    pp_reference_layer ref[PP_MAX_LAYERS];
    const size_t hidden_bytes = (size_t) layout.n * MAX(pp_model_max_hidden(model), 1) * 4;
    ok = cudaSetDevice(device) == cudaSuccess &&
         cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
         cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS && cudaEventCreate(&start) == cudaSuccess &&
         cudaEventCreate(&stop) == cudaSuccess &&
         cudaMalloc(&d_frame, layout.frame_bytes) == cudaSuccess &&
         cudaMalloc((void **) &d_koff, layout.k * sizeof(int32_t)) == cudaSuccess &&
         cudaMalloc((void **) &x_scratch, (size_t) layout.n * layout.k * 4) == cudaSuccess &&
         cudaMalloc((void **) &h_scratch[0], hidden_bytes) == cudaSuccess &&
         cudaMalloc((void **) &h_scratch[1], hidden_bytes) == cudaSuccess &&
         cudaMalloc((void **) &y, out_bytes) == cudaSuccess;
    for (unsigned l = 0; ok && l < model->n_layers; l++) {
      const pp_layer *ml = &model->layers[l];
      const size_t weights = (size_t) ml->out * ml->in * 4, biases = (size_t) ml->out * 4;
      ok = cudaMalloc((void **) &d_w[2 * l], weights) == cudaSuccess &&
           cudaMalloc((void **) &d_w[2 * l + 1], biases) == cudaSuccess &&
           cudaMemcpyAsync(d_w[2 * l], ml->w, weights, cudaMemcpyHostToDevice, stream) ==
               cudaSuccess &&
           cudaMemcpyAsync(d_w[2 * l + 1], ml->b, biases, cudaMemcpyHostToDevice, stream) ==
               cudaSuccess;
      /* At 16 bits, the weights in that type too. */
      if (ok && dtype != PP_DTYPE_F32)
        ok = cudaMalloc(&d_w16[l], weights / 2) == cudaSuccess &&
             pp_cuda_cast(stream, d_w[2 * l], weights / 4, dtype, false, d_w16[l]) == cudaSuccess;
      ref[l] = (pp_reference_layer){ d_w16[l] ? d_w16[l] : d_w[2 * l],
                                     ml->b ? d_w[2 * l + 1] : NULL, ml->in, ml->out, ml->act };
    }
    if (layout.kind != PP_LAYOUT_TENSOR)
      pp_cuda_k_offsets(&layout, h_koff);
    ok = ok &&
         cudaMemcpyAsync(d_frame, map.data, layout.frame_bytes, cudaMemcpyHostToDevice, stream) ==
             cudaSuccess &&
         cudaMemcpyAsync(d_koff, h_koff, layout.k * sizeof(int32_t), cudaMemcpyHostToDevice,
                         stream) == cudaSuccess;
    const pp_cuda_a x = pp_cuda_a_for_layout(&layout, h_koff, d_frame, d_koff);
    double samples[31];
    for (int i = -3; ok && i < 31; i++) {
      float ms = 0;
      ok = cudaEventRecord(start, stream) == cudaSuccess &&
           pp_cublas_reference_mlp(blas, stream, &x, layout.n, ref, model->n_layers,
                                   opts.precision == PP_PRECISION_TF32, dtype, x_scratch, h_scratch,
                                   y) == CUBLAS_STATUS_SUCCESS &&
           cudaEventRecord(stop, stream) == cudaSuccess &&
           cudaEventSynchronize(stop) == cudaSuccess &&
           cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
      if (i >= 0)
        samples[i] = ms * 1000.0;
    }
    if (ok)
      t->ref_mlp_us = pp_median(samples, 31);
    cudaStreamSynchronize(stream);
    for (unsigned i = 0; i < 2 * PP_MAX_LAYERS; i++)
      cudaFree(d_w[i]);
    for (unsigned i = 0; i < PP_MAX_LAYERS; i++)
      cudaFree(d_w16[i]);
    cudaFree(d_frame), cudaFree(d_koff), cudaFree(x_scratch), cudaFree(y);
    cudaFree(h_scratch[0]), cudaFree(h_scratch[1]);
    g_free(h_koff);
    cublasDestroy(blas);
    cudaEventDestroy(start), cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
  }
  if (!ok && !msg)
    msg = g_strdup("a CUDA call failed");
  gst_buffer_unmap(frame, &map);
  pp_host_free(out, out_bytes, true);
  if (b)
    b->ops->destroy(b);
  *msg_out = msg;
  return ok;
}
