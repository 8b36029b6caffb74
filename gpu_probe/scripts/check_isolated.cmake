# cpu_simd_isolated: the objects compiled with AVX2 / AVX-512 flags (OBJECTS, '|'-separated) may
# define, with external or weak linkage, only their kernel tables kSimdAvx2 / kSimdAvx512. Any
# other such symbol (an inline function or template instance from a shared header) could be
# chosen by the linker for the whole program and run AVX-512 code on a CPU without it.
string(REPLACE "|" ";" objects "${OBJECTS}")
set(bad "")
foreach(object IN LISTS objects)
  execute_process(COMMAND ${NM} --defined-only ${object} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${object}")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  foreach(line IN LISTS lines)
    # "ADDRESS TYPE NAME": uppercase types are global, W/V/u weak or unique
    if(line MATCHES "^[0-9a-fA-F]* *([A-Zu]) (.+)$")
      set(type "${CMAKE_MATCH_1}")
      set(name "${CMAKE_MATCH_2}")
      # DW.ref.__gxx_personality_v0 (V, emitted with unwind tables, e.g. under ASan at -O1) is
      # a pointer to the C++ runtime's personality routine, the same in every object: no code.
      if(NOT name MATCHES "kSimdAvx(2|512)E?$" AND NOT name STREQUAL "DW.ref.__gxx_personality_v0")
        list(APPEND bad "${object}: ${type} ${name}")
      endif()
    endif()
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "ISA-specific objects define shared symbols:\n  ${text}")
endif()
list(LENGTH objects count)
message(STATUS "${count} ISA-specific objects define only their kernel tables")
