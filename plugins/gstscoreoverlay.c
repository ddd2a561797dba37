// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-scoreoverlay
 *
 * Draws a frame's scores over the frame: the PpScoresMeta that
 * `cudamlp output=video-meta` attaches. With mapping=patches each patch is
 * tinted by its score through a colormap (as a grid, or smoothed between
 * patch centres); with mapping=rows each row's score is a bar at the
 * right edge. Frames without the meta pass unchanged.
 *
 * gst-launch-1.0 v4l2src ! videoconvert ! cudamlp output=video-meta mapping=patches model=m.safetensors ! scoreoverlay ! videoconvert ! autovideosink
 */
#include "gstscoreoverlay.h"

#include <math.h>

#include "colormaps.h"

GST_DEBUG_CATEGORY_STATIC(gst_score_overlay_debug);
#define GST_CAT_DEFAULT gst_score_overlay_debug

#define FORMATS                                                                                    \
  "{ RGBA, BGRA, ARGB, ABGR, RGBx, BGRx, xRGB, xBGR, RGB, BGR, I420, YV12, NV12, NV21 }"

enum {
  PROP_0,
  PROP_COLORMAP,
  PROP_OPACITY,
  PROP_RANGE,
  PROP_MIN,
  PROP_MAX,
  PROP_OUTPUT_INDEX,
  PROP_SMOOTH,
  PROP_BAR_WIDTH,
  N_PROPS,
};
static GParamSpec *properties[N_PROPS];

#define gst_score_overlay_parent_class parent_class
G_DEFINE_TYPE(GstScoreOverlay, gst_score_overlay, GST_TYPE_VIDEO_FILTER);
GST_ELEMENT_REGISTER_DEFINE(scoreoverlay, "scoreoverlay", GST_RANK_NONE, GST_TYPE_SCORE_OVERLAY);

static GType
colormap_get_type(void)
{
  static gsize type;
  if (g_once_init_enter(&type)) {
    GEnumValue *values = g_new0(GEnumValue, gst_pp_n_colormaps + 1);
    for (guint i = 0; i < gst_pp_n_colormaps; i++)
      values[i] = (GEnumValue){ i, gst_pp_colormaps[i].description, gst_pp_colormaps[i].nick };
    g_once_init_leave(&type, g_enum_register_static("GstScoreOverlayColormap", values));
  }
  return type;
}

static GType
range_get_type(void)
{
  static gsize type;
  static const GEnumValue values[] = {
    { GST_SCORE_OVERLAY_RANGE_FIXED, "From min to max", "fixed" },
    { GST_SCORE_OVERLAY_RANGE_FRAME, "Each frame's lowest to highest score", "frame" },
    { GST_SCORE_OVERLAY_RANGE_RUNNING,
      "The lowest to highest score since the stream started (or was flushed)", "running" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstScoreOverlayRange", values));
  return type;
}

/* ---- colours -------------------------------------------------------------- */

/* The colormap in the frame's components: R,G,B as they are, or Y,U,V by
 * the frame's colour matrix and range (what videoconvert would make). */
static void
make_colours(GstScoreOverlay *self, const GstVideoInfo *info, guint colormap)
{
  const guint8 *rgb = gst_pp_colormaps[colormap].rgb;
  const gboolean yuv = GST_VIDEO_INFO_IS_YUV(info);
  gdouble kr = 0.299, kb = 0.114;
  if (yuv && !gst_video_color_matrix_get_Kr_Kb(info->colorimetry.matrix, &kr, &kb))
    kr = 0.299, kb = 0.114;
  const gboolean full = info->colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;
  for (guint i = 0; i < 256; i++) {
    const gdouble r = rgb[3 * i] / 255.0, g = rgb[3 * i + 1] / 255.0, b = rgb[3 * i + 2] / 255.0;
    if (!yuv) {
      self->colour[i][0] = rgb[3 * i];
      self->colour[i][1] = rgb[3 * i + 1];
      self->colour[i][2] = rgb[3 * i + 2];
      continue;
    }
    const gdouble y = kr * r + (1 - kr - kb) * g + kb * b;
    const gdouble u = (b - y) / (2 * (1 - kb)), v = (r - y) / (2 * (1 - kr));
    const gdouble ys = full ? 255 : 219, yo = full ? 0 : 16, cs = full ? 255 : 224;
    self->colour[i][0] = (guint8) CLAMP(lround(y * ys + yo), 0, 255);
    self->colour[i][1] = (guint8) CLAMP(lround(u * cs + 128), 0, 255);
    self->colour[i][2] = (guint8) CLAMP(lround(v * cs + 128), 0, 255);
  }
  self->colour_for = colormap;
}

/* ---- buffers for one geometry -------------------------------------------- */

static void
free_scratch(GstScoreOverlay *self)
{
  g_clear_pointer(&self->index_row, g_free);
  g_clear_pointer(&self->cell_index, g_free);
  g_clear_pointer(&self->cell_value, g_free);
  g_clear_pointer(&self->col0, g_free);
  g_clear_pointer(&self->col1, g_free);
  g_clear_pointer(&self->col_w, g_free);
  g_clear_pointer(&self->scratch, g_free);
  self->cells = self->scratch_cells = 0;
}

static gboolean
gst_score_overlay_set_info(GstVideoFilter *filter, GstCaps *incaps, GstVideoInfo *in_info,
                           GstCaps *outcaps, GstVideoInfo *out_info)
{
  GstScoreOverlay *self = GST_SCORE_OVERLAY(filter);
  (void) incaps, (void) outcaps, (void) out_info;
  free_scratch(self);
  const guint w = GST_VIDEO_INFO_WIDTH(in_info);
  self->index_row = g_new(guint16, w);
  self->col0 = g_new(guint16, w);
  self->col1 = g_new(guint16, w);
  self->col_w = g_new(guint16, w);
  self->colour_for = G_MAXUINT;
  return TRUE;
}

/* Grows the per-sample buffers when a meta has more samples than before;
 * after the first frames of a stream, never. */
static void
ensure_cells(GstScoreOverlay *self, gsize cells, guint grid_w)
{
  if (cells > self->cells) {
    self->cell_index = g_renew(guint8, self->cell_index, cells);
    self->cell_value = g_renew(gfloat, self->cell_value, cells);
    self->cells = cells;
  }
  if (grid_w > self->scratch_cells) {
    self->scratch = g_renew(gint32, self->scratch, grid_w);
    self->scratch_cells = grid_w;
  }
}

/* ---- one frame ------------------------------------------------------------ */

/* The value range this frame is drawn with. */
static void
value_range(GstScoreOverlay *self, const gfloat *scores, guint n, guint stride, guint o,
            GstScoreOverlayRange range, gdouble fixed_min, gdouble fixed_max, gdouble *lo,
            gdouble *hi)
{
  if (range == GST_SCORE_OVERLAY_RANGE_FIXED) {
    *lo = fixed_min;
    *hi = fixed_max;
    return;
  }
  gdouble fmin = INFINITY, fmax = -INFINITY;
  for (guint i = 0; i < n; i++) {
    const gdouble v = scores[(gsize) i * stride + o];
    if (isfinite(v)) {
      fmin = MIN(fmin, v);
      fmax = MAX(fmax, v);
    }
  }
  if (range == GST_SCORE_OVERLAY_RANGE_RUNNING && fmin <= fmax) {
    self->seen_min = self->seen_any ? MIN(self->seen_min, fmin) : fmin;
    self->seen_max = self->seen_any ? MAX(self->seen_max, fmax) : fmax;
    self->seen_any = TRUE;
  }
  *lo = range == GST_SCORE_OVERLAY_RANGE_RUNNING ? self->seen_min : fmin;
  *hi = range == GST_SCORE_OVERLAY_RANGE_RUNNING ? self->seen_max : fmax;
  if (!(*lo <= *hi)) /* no finite score yet */
    *lo = *hi = 0;
}

static GstFlowReturn
gst_score_overlay_transform_frame_ip(GstVideoFilter *filter, GstVideoFrame *frame)
{
  GstScoreOverlay *self = GST_SCORE_OVERLAY(filter);
  GstPpScores scores;
  if (!gst_pp_buffer_read_scores(frame->buffer, &scores) || scores.outputs == 0 || scores.n == 0)
    return GST_FLOW_OK;
  const GstPpScores *meta = &scores;

  GST_OBJECT_LOCK(self);
  const guint colormap = self->colormap, o = self->output_index, bar = self->bar_width;
  const guint alpha = (guint) lround(self->opacity * 256);
  const GstScoreOverlayRange range = self->range;
  const gdouble fixed_min = self->min, fixed_max = self->max;
  const gboolean smooth = self->smooth;
  GST_OBJECT_UNLOCK(self);

  if (o >= meta->outputs) {
    if (!self->warned_output)
      GST_ELEMENT_WARNING(
          self, STREAM, FORMAT, ("Nothing to draw: no such output."),
          ("output-index is %u but the frames' scores have %u outputs", o, meta->outputs));
    self->warned_output = TRUE;
    return GST_FLOW_OK;
  }
  if (!meta->data) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("A frame's scores are shorter than they say: %u × %u floats expected.",
                       meta->n, meta->outputs),
                      ("the meta's data holds fewer bytes than its shape"));
    return GST_FLOW_ERROR;
  }
  gdouble lo, hi;
  value_range(self, meta->data, meta->n, meta->outputs, o, range, fixed_min, fixed_max, &lo, &hi);
  const gdouble scale = hi > lo ? 255.0 / (hi - lo) : 0;

  const gboolean patches = meta->layout == GST_PP_SCORES_PATCHES;
  ensure_cells(self, meta->n, patches ? meta->grid_width : 1);
  for (guint i = 0; i < meta->n; i++) {
    const gdouble v = meta->data[(gsize) i * meta->outputs + o];
    const gdouble scaled = isfinite(v) ? CLAMP((v - lo) * scale, 0.0, 255.0) : 0.0;
    self->cell_value[i] = (gfloat) scaled;
    self->cell_index[i] = (guint8) lround(scaled);
  }

  if (self->colour_for != colormap)
    make_colours(self, &frame->info, colormap);
  const guint width = GST_VIDEO_FRAME_WIDTH(frame), height = GST_VIDEO_FRAME_HEIGHT(frame);
  GstPpScoreGrid grid = {
    .layout = patches ? GST_PP_SCORES_PATCHES : GST_PP_SCORES_ROWS,
    .width = width,
    .height = height,
    .patch = MAX(meta->patch_size, 1),
    .grid_w = patches ? MIN(meta->grid_width, width / MAX(meta->patch_size, 1)) : 1,
    .grid_h = patches ? MIN(meta->grid_height, meta->n / MAX(meta->grid_width, 1)) : meta->n,
    .bar_width = bar,
    .smooth = smooth && patches,
    .cell_index = self->cell_index,
    .cell_value = self->cell_value,
    .col0 = self->col0,
    .col1 = self->col1,
    .col_w = self->col_w,
    .scratch = self->scratch,
  };
  if (patches && (grid.grid_w == 0 || grid.grid_h == 0))
    return GST_FLOW_OK;
  gst_pp_score_grid_prepare(&grid);
  /* A row of indices serves every row of its patch when not smoothing. */
  gint filled_for = -1;
  for (guint y = 0; y < height; y++) {
    const gint key = grid.smooth || !patches ? (gint) y : (gint) MIN(y / grid.patch, grid.grid_h);
    if (key != filled_for) {
      gst_pp_score_grid_row(&grid, y, self->index_row);
      filled_for = key;
    }
    gst_pp_blend_row(frame, y, self->index_row, (const guint8(*)[4]) self->colour, alpha);
  }
  return GST_FLOW_OK;
}

static gboolean
gst_score_overlay_sink_event(GstBaseTransform *trans, GstEvent *event)
{
  GstScoreOverlay *self = GST_SCORE_OVERLAY(trans);
  if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_STOP ||
      GST_EVENT_TYPE(event) == GST_EVENT_STREAM_START)
    self->seen_any = FALSE;
  return GST_BASE_TRANSFORM_CLASS(parent_class)->sink_event(trans, event);
}

static gboolean
gst_score_overlay_stop(GstBaseTransform *trans)
{
  GstScoreOverlay *self = GST_SCORE_OVERLAY(trans);
  free_scratch(self);
  self->seen_any = FALSE;
  self->warned_output = FALSE;
  return TRUE;
}

/* ---- GObject ---------------------------------------------------------------- */

static void
gst_score_overlay_set_property(GObject *object, guint prop_id, const GValue *value,
                               GParamSpec *pspec)
{
  GstScoreOverlay *self = GST_SCORE_OVERLAY(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_COLORMAP:
      self->colormap = g_value_get_enum(value);
      break;
    case PROP_OPACITY:
      self->opacity = g_value_get_double(value);
      break;
    case PROP_RANGE:
      self->range = g_value_get_enum(value);
      break;
    case PROP_MIN:
      self->min = g_value_get_double(value);
      break;
    case PROP_MAX:
      self->max = g_value_get_double(value);
      break;
    case PROP_OUTPUT_INDEX:
      self->output_index = g_value_get_uint(value);
      break;
    case PROP_SMOOTH:
      self->smooth = g_value_get_boolean(value);
      break;
    case PROP_BAR_WIDTH:
      self->bar_width = g_value_get_uint(value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_score_overlay_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstScoreOverlay *self = GST_SCORE_OVERLAY(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_COLORMAP:
      g_value_set_enum(value, self->colormap);
      break;
    case PROP_OPACITY:
      g_value_set_double(value, self->opacity);
      break;
    case PROP_RANGE:
      g_value_set_enum(value, self->range);
      break;
    case PROP_MIN:
      g_value_set_double(value, self->min);
      break;
    case PROP_MAX:
      g_value_set_double(value, self->max);
      break;
    case PROP_OUTPUT_INDEX:
      g_value_set_uint(value, self->output_index);
      break;
    case PROP_SMOOTH:
      g_value_set_boolean(value, self->smooth);
      break;
    case PROP_BAR_WIDTH:
      g_value_set_uint(value, self->bar_width);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_score_overlay_finalize(GObject *object)
{
  free_scratch(GST_SCORE_OVERLAY(object));
  G_OBJECT_CLASS(parent_class)->finalize(object);
}

static void
gst_score_overlay_class_init(GstScoreOverlayClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  GstVideoFilterClass *filter_class = GST_VIDEO_FILTER_CLASS(klass);
  const GParamFlags flags = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_CONTROLLABLE;

  object_class->set_property = gst_score_overlay_set_property;
  object_class->get_property = gst_score_overlay_get_property;
  object_class->finalize = gst_score_overlay_finalize;

  properties[PROP_COLORMAP] =
      g_param_spec_enum("colormap", "Colormap", "Colours from the lowest to the highest score",
                        colormap_get_type(), 0, flags);
  properties[PROP_OPACITY] = g_param_spec_double(
      "opacity", "Opacity", "0: the frame alone; 1: the colours alone", 0, 1, 0.5, flags);
  properties[PROP_RANGE] = g_param_spec_enum(
      "range", "Range", "Which scores the colormap's two ends stand for (beyond them: the ends)",
      range_get_type(), GST_SCORE_OVERLAY_RANGE_RUNNING, flags);
  properties[PROP_MIN] =
      g_param_spec_double("min", "Minimum", "The score at the colormap's low end, with range=fixed",
                          -G_MAXDOUBLE, G_MAXDOUBLE, 0, flags);
  properties[PROP_MAX] = g_param_spec_double(
      "max", "Maximum", "The score at the colormap's high end, with range=fixed", -G_MAXDOUBLE,
      G_MAXDOUBLE, 1, flags);
  properties[PROP_OUTPUT_INDEX] = g_param_spec_uint(
      "output-index", "Output index", "Which of each sample's outputs to draw (0 = the first)", 0,
      G_MAXUINT, 0, flags);
  properties[PROP_SMOOTH] = g_param_spec_boolean(
      "smooth", "Smooth",
      "mapping=patches: interpolate between patch centres instead of one colour per patch", FALSE,
      flags);
  properties[PROP_BAR_WIDTH] = g_param_spec_uint(
      "bar-width", "Bar width",
      "mapping=rows: width in pixels of the bar at the frame's right edge that shows each row's "
      "score",
      1, G_MAXUINT, 16, flags);
  g_object_class_install_properties(object_class, N_PROPS, properties);

  GstCaps *caps = gst_caps_from_string(GST_VIDEO_CAPS_MAKE(FORMATS));
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref(caps);
  gst_element_class_set_static_metadata(
      element_class, "Score overlay", "Filter/Effect/Video",
      "Draws the scores cudamlp attaches to frames (output=video-meta) over them: a heat map for "
      "mapping=patches, a bar for mapping=rows",
      "pingpong developers");

  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_score_overlay_sink_event);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_score_overlay_stop);
  filter_class->set_info = GST_DEBUG_FUNCPTR(gst_score_overlay_set_info);
  filter_class->transform_frame_ip = GST_DEBUG_FUNCPTR(gst_score_overlay_transform_frame_ip);
  gst_type_mark_as_plugin_api(range_get_type(), 0);
  gst_type_mark_as_plugin_api(colormap_get_type(), 0);
  GST_DEBUG_CATEGORY_INIT(gst_score_overlay_debug, "scoreoverlay", 0, "pingpong score overlay");
}

static void
gst_score_overlay_init(GstScoreOverlay *self)
{
  self->opacity = 0.5;
  self->range = GST_SCORE_OVERLAY_RANGE_RUNNING;
  self->max = 1;
  self->bar_width = 16;
  self->colour_for = G_MAXUINT;
}
