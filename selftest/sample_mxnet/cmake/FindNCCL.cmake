find_path(NCCL_INCLUDE_DIRS nccl.h HINTS ${NCCL_INCLUDE_DIR} ${NCCL_ROOT} ENV NCCL_ROOT PATH_SUFFIXES include)
find_library(NCCL_LIBRARIES NAMES nccl HINTS ${NCCL_LIB_DIR} ${NCCL_ROOT} ENV NCCL_ROOT
             PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL DEFAULT_MSG NCCL_INCLUDE_DIRS NCCL_LIBRARIES)
mark_as_advanced(NCCL_INCLUDE_DIRS NCCL_LIBRARIES)
