# The shared library, install rules, the CMake package (backplaneConfig.cmake) and backplane.pc.
# Included from the top-level CMakeLists.txt after the targets are defined.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# libbackplane.so.0: the objects of the static library, linked whole (nothing compiles twice).
# The version script (backplane.map) exports namespace backplane only, as version BACKPLANE_0.
set(BACKPLANE_VERSION_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/backplane.map")
add_library(backplane_shared SHARED "${CMAKE_CURRENT_LIST_DIR}/shared_library.cpp")
set_target_properties(backplane_shared PROPERTIES
  OUTPUT_NAME backplane
  EXPORT_NAME backplane
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS "${BACKPLANE_VERSION_SCRIPT}"
  # Keeps the OpenMP build of OpenBLAS (its own directory) on the installed library's RUNPATH.
  INSTALL_RPATH_USE_LINK_PATH ON)
target_link_libraries(backplane_shared
  PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,backplane>"
  PUBLIC ${BACKPLANE_PUBLIC_LIBRARIES})
target_link_options(backplane_shared PRIVATE "LINKER:--version-script=${BACKPLANE_VERSION_SCRIPT}"
                    "LINKER:--no-undefined")
target_include_directories(backplane_shared PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_definitions(backplane_shared PUBLIC ${BACKPLANE_PUBLIC_DEFINITIONS})

set_target_properties(backplane PROPERTIES EXPORT_NAME backplane_static)
if(TARGET backplane_cli)
  set_target_properties(backplane_cli PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS backplane_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(TARGETS backplane backplane_shared EXPORT backplaneTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/backplane DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(BACKPLANE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/backplane)
install(EXPORT backplaneTargets NAMESPACE backplane:: DESTINATION ${BACKPLANE_CMAKE_DIR})
configure_package_config_file(cmake/backplaneConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/backplaneConfig.cmake" INSTALL_DESTINATION ${BACKPLANE_CMAKE_DIR})
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/backplaneConfigVersion.cmake"
  COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/backplaneConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/backplaneConfigVersion.cmake"
        DESTINATION ${BACKPLANE_CMAKE_DIR})

# backplane.pc, relocatable: its prefix is found from the file's own directory.
file(RELATIVE_PATH BACKPLANE_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" BACKPLANE_PC_TO_PREFIX "${BACKPLANE_PC_TO_PREFIX}")
get_filename_component(BACKPLANE_OPENBLAS_LIBDIR "${OpenBLAS_LIBRARIES}" DIRECTORY)
# Not BACKPLANE_VERSION: a quoted string does not survive the word splitting of
# $(pkg-config --cflags) (pkg-config --modversion backplane gives it).
set(BACKPLANE_PC_CFLAGS "")
if(BACKPLANE_HAVE_XLA)
  set(BACKPLANE_PC_CFLAGS " -DBACKPLANE_HAVE_XLA=1")
endif()
set(BACKPLANE_PC_LIBS_PRIVATE "-L${BACKPLANE_OPENBLAS_LIBDIR} -Wl,-rpath,${BACKPLANE_OPENBLAS_LIBDIR} -lopenblas -lonnx_proto")
if(BACKPLANE_HAVE_XLA)
  string(APPEND BACKPLANE_PC_LIBS_PRIVATE " -l${CMAKE_DL_LIBS}")
endif()
if(BACKPLANE_HAVE_CUDA)
  string(APPEND BACKPLANE_PC_CFLAGS " -DBACKPLANE_HAVE_CUDA=1")
  string(APPEND BACKPLANE_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
configure_file(cmake/backplane.pc.in "${CMAKE_CURRENT_BINARY_DIR}/backplane.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/backplane.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
