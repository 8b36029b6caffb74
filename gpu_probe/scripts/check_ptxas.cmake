# The ptxas resource check (ctest ptxas_resources): reads the resource reports ptxas wrote when
# the kernels were built (-Xptxas -v, kept by ptxas_log.sh as OBJECT.ptxas.txt) and fails when a
# hot kernel instance has a stack frame or spills: a spill is a local-memory round trip in the
# inner loop, exactly what a bandwidth-bound kernel cannot afford. Lists every instance.
#   cmake -DLOGS="a.ptxas.txt;b.ptxas.txt" [-DARCHS="80,90"] [-DHOT=regex] -P check_ptxas.cmake
# ARCHS is CMAKE_CUDA_ARCHITECTURES (commas or semicolons): every real architecture in it must have hot instances, so a
# report that lost an architecture fails instead of passing on the other one.
#
# ptxas -v prints, per entry function (CUDA 11-13):
#   ptxas info    : Compiling entry function 'MANGLED' for 'sm_90'
#   ptxas info    : Function properties for MANGLED          (one per function: entry, callees)
#       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
#   ptxas info    : Used 40 registers, used 1 barriers, 552 bytes cmem[0]
# The worst stack and spill figures of the block count (a non-inlined callee's frame is the
# entry's too). Block-by-block parsing needs one ptxas at a time: nvcc --threads runs one per
# architecture side by side, so a report with two architectures and overlapping blocks is refused.
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED HOT)
  set(HOT "decodeTileKernel|decodeReduceKernel|storeRowsKernel|storeKiviKeysKernel")
endif()
find_program(CXXFILT c++filt)

# The real architectures ptxas compiled for: "80;90", "90-real" and "80-virtual" (PTX only: no
# ptxas report) as CMake spells them; "native", "all" and "all-major" name none in particular.
string(REPLACE "," ";" ARCHS "${ARCHS}")
set(want_archs "")
foreach(a IN LISTS ARCHS)
  if(a MATCHES "^([0-9]+[a-z]?)(-real)?$")
    list(APPEND want_archs "sm_${CMAKE_MATCH_1}")
  endif()
endforeach()

set(checked 0)
set(failed 0)
set(fallback 0)
set(seen_archs "")
foreach(log IN LISTS LOGS)
  if(NOT EXISTS "${log}")
    message(FATAL_ERROR "ptxas report ${log} is missing: build the CUDA kernels (kvl_probe) first")
  endif()
  file(STRINGS "${log}" lines)
  set(entry "")
  foreach(line IN LISTS lines)
    if(line MATCHES "Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)'")
      if(entry)
        message(FATAL_ERROR "${log}: the report of ${entry} (${arch}) has no 'Used N registers' "
                            "line before the next entry: interleaved ptxas output (nvcc --threads "
                            "with several architectures?); rebuild without --threads")
      endif()
      set(entry "${CMAKE_MATCH_1}")
      set(arch "${CMAKE_MATCH_2}")
      set(stack -1)
      set(stores 0)
      set(loads 0)
    elseif(entry AND line MATCHES "^ *([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")
      if(CMAKE_MATCH_1 GREATER stack)
        set(stack "${CMAKE_MATCH_1}")
      endif()
      if(CMAKE_MATCH_2 GREATER stores)
        set(stores "${CMAKE_MATCH_2}")
      endif()
      if(CMAKE_MATCH_3 GREATER loads)
        set(loads "${CMAKE_MATCH_3}")
      endif()
    elseif(entry AND line MATCHES "Used ([0-9]+) registers")
      if(stack LESS 0)
        message(FATAL_ERROR "${log}: no 'bytes stack frame' line for ${entry} (${arch}): "
                            "ptxas's report format changed; update check_ptxas.cmake")
      endif()
      set(regs "${CMAKE_MATCH_1}")
      set(name "${entry}")
      if(CXXFILT)
        execute_process(COMMAND "${CXXFILT}" "${entry}" OUTPUT_VARIABLE name
                        OUTPUT_STRIP_TRAILING_WHITESPACE)
        string(REGEX REPLACE "kvl::probe::cuda::\\(anonymous namespace\\)::" "" name "${name}")
        string(REGEX REPLACE "\\(kvl::probe::cuda::Kv\\)" "Kv" name "${name}")
      endif()
      set(row "${arch} ${name}: ${regs} registers, ${stack} B stack, ${stores}/${loads} B spill stores/loads")
      if(entry MATCHES "${HOT}")
        math(EXPR checked "${checked} + 1")
        list(APPEND seen_archs "${arch}")
        if(stack GREATER 0 OR stores GREATER 0 OR loads GREATER 0)
          math(EXPR failed "${failed} + 1")
          message("FAIL  ${row}")
        else()
          message("ok    ${row}")
        endif()
      else()
        math(EXPR fallback "${fallback} + 1")
        message("skip  ${row} (fallback kernel, not hot)")
      endif()
      set(entry "")
    endif()
  endforeach()
  if(entry)
    message(FATAL_ERROR "${log}: the report of ${entry} (${arch}) ends before its 'Used N registers' line")
  endif()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "no hot kernel instance found in ${LOGS}")
endif()
foreach(a IN LISTS want_archs)
  if(NOT a IN_LIST seen_archs)
    message(FATAL_ERROR "no hot kernel instance for ${a} (CMAKE_CUDA_ARCHITECTURES ${ARCHS}) in ${LOGS}")
  endif()
endforeach()
list(REMOVE_DUPLICATES seen_archs)
message("${checked} hot kernel instances checked (${seen_archs}), ${failed} with a stack frame or "
        "spills; ${fallback} fallback instances not checked")
if(failed GREATER 0)
  message(FATAL_ERROR "${failed} hot kernel instance(s) have a stack frame or spill")
endif()
