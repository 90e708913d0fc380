# `cmake --install`, the man page and the Debian package (cpack -G DEB).
#
#   bin/nnapi-convert
#   lib/nnapi-convert/libneuralnetworks.so      host runtime for --verify, off the
#                                               loader's path (it must not shadow a
#                                               real libneuralnetworks.so)
#   include/nnapi_convert/*.h, lib/libnnapi_convert.a, lib/libnnapi_convert_types.a,
#   lib/libnnapi_convert_validate.a
#   lib/cmake/nnapi_convert/                    find_package(nnapi_convert)
#   include/nnapi_runtime/android/NeuralNetworks.h, lib/pkgconfig/nnapi-convert-runtime.pc
#                                               the runtime for C/C++ programs (pkg-config)
#   share/man/man1/nnapi-convert.1.gz           when help2man is installed
#   lib/python3/dist-packages/nnapi_convert/    the Python package (it runs bin/nnapi-convert)
#
# Two components: `cli` (the binary, the runtime, the man page) and `dev` (the
# library for consumers); `cmake --install` installs both, cpack makes one .deb each.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(NNAPI_CONVERT_RUNTIME_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/nnapi-convert CACHE STRING
    "Where the host runtime libneuralnetworks.so is installed, relative to the prefix")
# verify.cpp looks for the runtime relative to the binary's directory.
file(RELATIVE_PATH NNAPI_CONVERT_RUNTIME_FROM_BIN
     /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${NNAPI_CONVERT_RUNTIME_INSTALL_DIR})
set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/verify/verify.cpp APPEND PROPERTY
  COMPILE_DEFINITIONS NNAPI_CONVERT_INSTALLED_RUNTIME_DIR="${NNAPI_CONVERT_RUNTIME_FROM_BIN}")

install(TARGETS nnapi-convert RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(TARGETS neuralnetworks LIBRARY DESTINATION ${NNAPI_CONVERT_RUNTIME_INSTALL_DIR}
        COMPONENT cli)

# The Python package nnapi_convert (pure Python; it runs the binary), where
# Debian's python3 keeps packages of the system: the deb_system scheme's
# purelib (lib/python3/dist-packages), asked of Debian's python3 when there is
# one. With another prefix than /usr, python3 finds it through PYTHONPATH.
set(_nnapi_pydir lib/python3/dist-packages)
if(EXISTS /usr/bin/python3)
  execute_process(
    COMMAND /usr/bin/python3 -c
            "import sysconfig; print(sysconfig.get_path('purelib', 'deb_system', vars={'base': '.'}))"
    OUTPUT_VARIABLE _nnapi_deb_purelib OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _nnapi_py_rc
    ERROR_QUIET)
  if(_nnapi_py_rc EQUAL 0 AND _nnapi_deb_purelib MATCHES "^\\./(.+)$")
    set(_nnapi_pydir ${CMAKE_MATCH_1})
  endif()
endif()
set(NNAPI_CONVERT_PYTHON_INSTALL_DIR ${_nnapi_pydir} CACHE STRING
    "Where the Python package nnapi_convert is installed, relative to the prefix")
# The package finds the binary relative to its own directory (_installed.py).
file(RELATIVE_PATH NNAPI_CONVERT_BIN_FROM_PYTHON
     /prefix/${NNAPI_CONVERT_PYTHON_INSTALL_DIR}/nnapi_convert
     /prefix/${CMAKE_INSTALL_BINDIR}/nnapi-convert)
file(WRITE ${CMAKE_BINARY_DIR}/python/_installed.py
     "# Written by cmake/Install.cmake: the binary, relative to this directory.\n"
     "BINARY = \"${NNAPI_CONVERT_BIN_FROM_PYTHON}\"\n")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/nnapi_convert
        DESTINATION ${NNAPI_CONVERT_PYTHON_INSTALL_DIR} COMPONENT cli
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/python/_installed.py
        DESTINATION ${NNAPI_CONVERT_PYTHON_INSTALL_DIR}/nnapi_convert COMPONENT cli)

# The library and its exported target.
set_target_properties(nnapi_convert_lib PROPERTIES
  EXPORT_NAME nnapi_convert OUTPUT_NAME nnapi_convert)
set_target_properties(nnapi_types PROPERTIES
  EXPORT_NAME nnapi_types OUTPUT_NAME nnapi_convert_types)
set_target_properties(nnapi_validate PROPERTIES
  EXPORT_NAME nnapi_validate OUTPUT_NAME nnapi_convert_validate)
install(TARGETS nnapi_convert_lib nnapi_types nnapi_validate EXPORT nnapi_convertTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/nnapi_convert
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
set(_nnapi_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/nnapi_convert)
install(EXPORT nnapi_convertTargets NAMESPACE nnapi_convert:: DESTINATION ${_nnapi_cmake_dir}
        COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/nnapi_convertConfig.cmake.in
  ${CMAKE_BINARY_DIR}/nnapi_convertConfig.cmake INSTALL_DESTINATION ${_nnapi_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/nnapi_convertConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/nnapi_convertConfig.cmake
              ${CMAKE_BINARY_DIR}/nnapi_convertConfigVersion.cmake
        DESTINATION ${_nnapi_cmake_dir} COMPONENT dev)

# The runtime's C API for standalone use: the header and a pkg-config file whose
# paths are relative to its own directory (${pcfiledir}), so that --prefix at
# install time and the Debian package's /usr both work.
install(FILES ${PROJECT_SOURCE_DIR}/include/nnapi_runtime/android/NeuralNetworks.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nnapi_runtime/android COMPONENT dev)
file(RELATIVE_PATH NNAPI_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" NNAPI_PC_TO_PREFIX "${NNAPI_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/nnapi-convert-runtime.pc.in
               ${CMAKE_BINARY_DIR}/nnapi-convert-runtime.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/nnapi-convert-runtime.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# The man page, from --help and --version; skipped without help2man.
find_program(HELP2MAN_PROGRAM help2man)
find_program(GZIP_PROGRAM gzip)
if(HELP2MAN_PROGRAM AND GZIP_PROGRAM)
  set(_nnapi_man ${CMAKE_BINARY_DIR}/man/nnapi-convert.1)
  add_custom_command(OUTPUT ${_nnapi_man}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${HELP2MAN_PROGRAM} --no-info
            --name "convert TorchScript models to Android NNAPI models"
            --output ${_nnapi_man} $<TARGET_FILE:nnapi-convert>
    COMMAND ${GZIP_PROGRAM} -9nf ${_nnapi_man}
    DEPENDS nnapi-convert
    COMMENT "Generating the nnapi-convert(1) man page with help2man"
    VERBATIM)
  add_custom_target(man ALL DEPENDS ${_nnapi_man}.gz)
  install(FILES ${_nnapi_man}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT cli)
  set(NNAPI_CONVERT_HAVE_MAN ON)
else()
  message(STATUS "help2man or gzip not found: no man page (apt-get install help2man)")
  set(NNAPI_CONVERT_HAVE_MAN OFF)
endif()

# cpack -G DEB (in the build directory): nnapi-convert_<version>_<arch>.deb and
# libnnapi-convert-dev_<version>_<arch>.deb. The cli Depends are what
# dpkg-shlibdeps computes for the binary and the runtime on Debian bookworm
# (libspdlog1.10-fmt9 is provided by libspdlog1.10 built against libfmt9);
# written out so that packaging needs no dpkg-dev.
set(CPACK_PACKAGE_NAME nnapi-convert)
set(CPACK_PACKAGE_VENDOR "nnapi-convert")
# The maintainer defaults to the project's commit identity; distributors set their own.
set(CPACK_PACKAGE_CONTACT
    "nnapi-convert maintainers <maintainers@users.noreply.a-seed-4eb5c6be.example>"
    CACHE STRING "Maintainer field of the Debian packages")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME nnapi-convert)
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS
    "libc6 (>= 2.34), libfmt9 (>= 9.1.0+ds1), libgcc-s1 (>= 3.0), libspdlog1.10-fmt9, \
libstdc++6 (>= 11), libtorch1.13 (>= 1.13.1+dfsg), zlib1g (>= 1:1.1.4), \
libfarmhash0, libstb0, libssl3")
# Descriptions: the first line is the Debian synopsis (no package-wide summary
# is set, so CPack does not put one in front of both), the rest is wrapped.
set(CPACK_COMPONENT_CLI_DESCRIPTION "converts TorchScript models to Android NNAPI models
nnapi-convert converts a TorchScript model (.pt) into the module that PyTorch's \
convert_model_to_nnapi produces, which an Android app loads with org.pytorch.Module. \
It ships a host NNAPI runtime (libneuralnetworks.so in /usr/lib/nnapi-convert, off the \
loader's path) with which --verify runs the converted model against the original.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libnnapi-convert-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libtorch-dev (>= 1.13), libtorch-dev (<< 1.14), libspdlog-dev, nlohmann-json3-dev, zlib1g-dev, libstb-dev, libssl-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION "nnapi-convert as a C++ library
The converter, the --input spec parser, the blob reader and --verify as a static \
library with headers in /usr/include/nnapi_convert, for CMake's \
find_package(nnapi_convert) and the target nnapi_convert::nnapi_convert.")
include(CPack)
