# Install rules: headers, libhushtrace.{so,a}, the hushtrace CLI, a CMake package
# (find_package(hushtrace) -> hushtrace::hushtrace, hushtrace::hushtrace_static, hushtrace::reader)
# and a pkg-config file. Included from the top-level CMakeLists.txt after all
# targets are defined; every target is optional so configuring always works.
include(CMakePackageConfigHelpers)

set(HUSH_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/hushtrace")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/hushtrace"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# Sets PROP on TARGET to VALUE unless the target already sets it.
function(hush_default_property target prop value)
  get_target_property(current ${target} ${prop})
  if(NOT current)
    set_target_properties(${target} PROPERTIES ${prop} "${value}")
  endif()
endfunction()

set(hush_exported "")
if(TARGET hushtrace_shared)
  hush_default_property(hushtrace_shared OUTPUT_NAME hushtrace)
  hush_default_property(hushtrace_shared VERSION "${PROJECT_VERSION}")
  # 0.x releases may break the ABI with every minor version.
  hush_default_property(hushtrace_shared SOVERSION
                        "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
  hush_default_property(hushtrace_shared EXPORT_NAME hushtrace)
  list(APPEND hush_exported hushtrace_shared)
endif()
if(TARGET hushtrace_static)
  hush_default_property(hushtrace_static OUTPUT_NAME hushtrace)
  hush_default_property(hushtrace_static EXPORT_NAME hushtrace_static)
  list(APPEND hush_exported hushtrace_static)
endif()

# The trace reader (include/hushtrace/reader.h), for programs that read traces:
# find_package(hushtrace COMPONENTS reader) -> hushtrace::reader.
if(TARGET hushtrace_reader)
  hush_default_property(hushtrace_reader EXPORT_NAME reader)
  list(APPEND hush_exported hushtrace_reader)
endif()

if(hush_exported)
  install(TARGETS ${hush_exported} EXPORT hushtraceTargets
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
          INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(EXPORT hushtraceTargets NAMESPACE hushtrace::
          DESTINATION "${HUSH_CMAKE_DIR}")
endif()

if(TARGET hushtrace)
  # No RUNPATH: the CLI links none of the project's shared libraries (it finds the runtime it
  # preloads by path, tools/hushtrace/CMakeLists.txt). One would cost every command a failed
  # open() per directory and needed library at start, and in the build tree CMake pads it with
  # empty entries (the current directory) to rewrite it at install: 66 failed opens per command.
  install(TARGETS hushtrace RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/hushtraceConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/hushtraceConfig.cmake"
  INSTALL_DESTINATION "${HUSH_CMAKE_DIR}")
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/hushtraceConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/hushtraceConfig.cmake"
              "${PROJECT_BINARY_DIR}/hushtraceConfigVersion.cmake"
        DESTINATION "${HUSH_CMAKE_DIR}")

# pkg-config: ${prefix} is the one given at install time (cmake --install --prefix),
# so the file is staged here with a placeholder and finished by the install step.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(HUSH_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(HUSH_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(HUSH_PC_PREFIX "@HUSH_PC_PREFIX@")
# A library built with -DHUSH_STATIC_KEYS=OFF gives its consumers load-and-branch sites (CMake
# consumers get the definition from the exported targets).
set(HUSH_PC_EXTRA_CFLAGS "")
if(DEFINED HUSH_STATIC_KEYS AND NOT HUSH_STATIC_KEYS)
  set(HUSH_PC_EXTRA_CFLAGS " -DHUSH_NO_STATIC_KEYS")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/hushtrace.pc.in"
               "${PROJECT_BINARY_DIR}/hushtrace.pc.stage" @ONLY)
install(CODE "
  set(HUSH_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/hushtrace.pc.stage\"
                 \"${PROJECT_BINARY_DIR}/hushtrace.pc\" @ONLY)
")
install(FILES "${PROJECT_BINARY_DIR}/hushtrace.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
