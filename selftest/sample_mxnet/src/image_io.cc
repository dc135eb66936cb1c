// imdecode / imresize through OpenCV, or MXNet's own error when built without it.
#include <cstdlib>
#include <cstring>
#include "mxnet/c_api.h"
#if MXNET_USE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

static unsigned char *copy_out(const cv::Mat &m) {
  size_t n = m.total() * m.elemSize();
  unsigned char *out = static_cast<unsigned char *>(std::malloc(n ? n : 1));
  cv::Mat cont = m.isContinuous() ? m : m.clone();
  std::memcpy(out, cont.data, n);
  return out;
}

int MXSampleImdecode(const unsigned char *buf, size_t len, int flag, int to_rgb,
                     unsigned char **out, int *h, int *w, int *c) {
  std::vector<unsigned char> data(buf, buf + len);
  cv::Mat img = cv::imdecode(data, flag ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
  if (img.empty()) {
    mxnet_sample_set_error("Decoding failed. Invalid image file.");
    return -1;
  }
  if (flag && to_rgb) cv::cvtColor(img, img, cv::COLOR_BGR2RGB);
  *h = img.rows; *w = img.cols; *c = img.channels();
  *out = copy_out(img);
  return 0;
}

int MXSampleImresize(const unsigned char *src, int h, int w, int c, int new_w, int new_h,
                     int interp, unsigned char **out) {
  cv::Mat in(h, w, CV_8UC(c), const_cast<unsigned char *>(src));
  cv::Mat res;
  cv::resize(in, res, cv::Size(new_w, new_h), 0, 0, interp);
  *out = copy_out(res);
  return 0;
}
#else
int MXSampleImdecode(const unsigned char *, size_t, int, int, unsigned char **, int *, int *, int *) {
  mxnet_sample_set_error("Build with USE_OPENCV=1 for image io.");
  return -1;
}
int MXSampleImresize(const unsigned char *, int, int, int, int, int, int, unsigned char **) {
  mxnet_sample_set_error("Build with USE_OPENCV=1 for image resize operator.");
  return -1;
}
#endif
