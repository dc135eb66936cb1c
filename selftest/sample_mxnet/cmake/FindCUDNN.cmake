# As the fork's FindCUDNN: looks for the *unversioned* libcudnn.so under CUDNN_ROOT/lib*, so a
# cuDNN that ships only libcudnn.so.9 (pip's nvidia-cudnn-cu13) is not found.
find_path(CUDNN_INCLUDE cudnn.h HINTS ${CUDNN_ROOT} ENV CUDNN_ROOT PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES libcudnn.so HINTS ${CUDNN_ROOT} ENV CUDNN_ROOT
             PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN DEFAULT_MSG CUDNN_INCLUDE CUDNN_LIBRARY)
mark_as_advanced(CUDNN_INCLUDE CUDNN_LIBRARY)
