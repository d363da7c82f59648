# Writes vh5ConfigVersion.cmake with CMake's own write_basic_package_version_file, so the
# version check has exactly CMake's SameMajorVersion semantics. Run in script mode by
# scripts/install.sh:
#   cmake -DVH5_VERSION=0.1.0 -DVH5_SIZEOF_VOID_P=8 -DOUT=<file> -P cmake/write_version_file.cmake
#
# SameMajorVersion: a request `find_package(vh5 X.Y)` is satisfied when X equals our major
# version and X.Y <= our version. While vh5 is 0.x this means every 0.* request up to the
# installed version is accepted (0.1 finds 0.3.2) and 1.0 is refused; the soname
# libvh5.so.0 follows the same rule. The file also refuses a consumer whose pointer size
# differs from the library's (32-bit project vs 64-bit library).
cmake_minimum_required(VERSION 3.13)
foreach(var VH5_VERSION VH5_SIZEOF_VOID_P OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "write_version_file.cmake: -D${var}=... is required")
  endif()
endforeach()
include(CMakePackageConfigHelpers)
# write_basic_package_version_file records the pointer size of the "current project"; in
# script mode there is none, so state the library's.
set(CMAKE_SIZEOF_VOID_P ${VH5_SIZEOF_VOID_P})
write_basic_package_version_file("${OUT}" VERSION ${VH5_VERSION} COMPATIBILITY SameMajorVersion)
