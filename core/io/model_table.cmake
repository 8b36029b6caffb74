# kvl_generate_model_table(MODELS_JSON OUT_CPP): writes, at configure time, a C++ table of the
# model catalog (resources/models.json) read with CMake's string(JSON ...), so that kvprobe
# needs no JSON reader: the GPU machine has CMake, nvcc and a compiler, and no JSON library.
# The full build parses the same file with nlohmann-json, and tst_io checks that both agree
# on every model's KV geometry (layer kinds and windows, heads, per-layer overrides, MLA, the
# Mamba state). The MoE and width fields, the source and the notes are left out: kvprobe does
# not use them. Editing models.json re-runs the configure step (CMAKE_CONFIGURE_DEPENDS).

function(kvl_cxx_string out value) # the value as a C++ string literal
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\t" "\\t" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

function(kvl_generate_model_table models_json out_cpp)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${models_json})
  file(READ ${models_json} text)
  string(JSON count LENGTH "${text}" models)
  if(count LESS 1)
    message(FATAL_ERROR "${models_json}: no models")
  endif()
  math(EXPR last "${count} - 1")

  set(rows "")
  foreach(i RANGE ${last})
    string(JSON entry GET "${text}" models ${i})
    # Strings (hf_repo may be absent) and integers (the optional ones default to 0).
    foreach(key id name family hf_repo weight_dtype kv_dtype)
      string(JSON v ERROR_VARIABLE err GET "${entry}" ${key})
      if(err)
        if(key STREQUAL "hf_repo")
          set(v "")
        else()
          message(FATAL_ERROR "${models_json}: models[${i}].${key}: missing")
        endif()
      endif()
      kvl_cxx_string(s_${key} "${v}")
    endforeach()
    foreach(key num_layers num_q_heads num_kv_heads head_dim hidden_size params max_context
            sliding_window attention_chunk_size kv_lora_rank qk_rope_head_dim qk_nope_head_dim
            head_dim_v full_layer_kv_heads full_layer_head_dim)
      string(JSON v ERROR_VARIABLE err GET "${entry}" ${key})
      if(err)
        if(key MATCHES "^(num_layers|num_q_heads|num_kv_heads|head_dim|hidden_size|params|max_context)$")
          message(FATAL_ERROR "${models_json}: models[${i}].${key}: missing")
        endif()
        set(v 0)
      endif()
      if(NOT v MATCHES "^[0-9]+$")
        message(FATAL_ERROR "${models_json}: models[${i}].${key}: expected an integer, got ${v}")
      endif()
      set(n_${key} ${v})
    endforeach()
    string(JSON v ERROR_VARIABLE err GET "${entry}" sparse_mla)
    if(NOT err AND v)
      set(b_sparse_mla true)
    else()
      set(b_sparse_mla false)
    endif()
    # The layer kinds, comma separated: layer_types (every layer) or the cyclic layer_pattern;
    # absent both, the one kind the other fields imply (as catalog.cpp reads it).
    set(list_key layer_types)
    string(JSON pattern_len ERROR_VARIABLE err LENGTH "${entry}" layer_types)
    if(err)
      set(list_key layer_pattern)
      string(JSON pattern_len ERROR_VARIABLE err LENGTH "${entry}" layer_pattern)
    endif()
    if(err)
      if(NOT n_sliding_window EQUAL 0)
        set(pattern "sliding")
      elseif(NOT n_kv_lora_rank EQUAL 0)
        set(pattern "mla")
      else()
        set(pattern "full")
      endif()
    else()
      set(pattern "")
      math(EXPR pattern_last "${pattern_len} - 1")
      foreach(k RANGE ${pattern_last})
        string(JSON kind GET "${entry}" ${list_key} ${k})
        if(pattern STREQUAL "")
          set(pattern "${kind}")
        else()
          string(APPEND pattern ",${kind}")
        endif()
      endforeach()
    endif()
    kvl_cxx_string(s_pattern "${pattern}")
    # The Mamba / linear-attention state: kind, numbers (absent 0, n_groups 1) and dtypes.
    string(JSON state ERROR_VARIABLE err GET "${entry}" state)
    set(s_state_kind "\"\"")
    set(state_numbers "")
    set(s_conv_dtype "\"\"")
    set(s_ssm_dtype "\"\"")
    if(NOT err)
      string(JSON v GET "${state}" kind)
      kvl_cxx_string(s_state_kind "${v}")
      foreach(key intermediate_size num_heads head_dim n_groups state_size conv_kernel chunk_size
              num_key_heads num_value_heads key_head_dim value_head_dim)
        string(JSON v ERROR_VARIABLE err GET "${state}" ${key})
        if(err)
          if(key STREQUAL "n_groups")
            set(v 1)
          else()
            set(v 0)
          endif()
        endif()
        if(NOT v MATCHES "^[0-9]+$")
          message(FATAL_ERROR "${models_json}: models[${i}].state.${key}: expected an integer, got ${v}")
        endif()
        string(APPEND state_numbers "${v}, ")
      endforeach()
      foreach(key conv_dtype ssm_dtype)
        string(JSON v ERROR_VARIABLE err GET "${state}" ${key})
        if(err OR v STREQUAL "null")
          set(v "")
        endif()
        kvl_cxx_string(s_${key} "${v}")
      endforeach()
    else()
      set(state_numbers "0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, ")
    endif()
    string(APPEND rows "    {${s_id}, ${s_name}, ${s_family}, ${s_hf_repo}, ${n_num_layers}, "
                       "${s_pattern}, ${n_sliding_window}, ${n_attention_chunk_size}, "
                       "${n_num_q_heads}, ${n_num_kv_heads}, ${n_head_dim}, ${n_head_dim_v}, "
                       "${n_full_layer_kv_heads}, ${n_full_layer_head_dim}, ${n_kv_lora_rank}, "
                       "${n_qk_rope_head_dim}, ${n_qk_nope_head_dim}, ${b_sparse_mla}, "
                       "${s_state_kind}, ${state_numbers}${s_conv_dtype}, ${s_ssm_dtype}, "
                       "${n_hidden_size}, ${n_params}, ${n_max_context}, ${s_weight_dtype}, "
                       "${s_kv_dtype}},\n")
  endforeach()

  file(WRITE ${out_cpp}.tmp
"// Generated from resources/models.json by core/io/model_table.cmake; do not edit.
#include \"core/io/model_table.h\"

namespace kvl::io::detail {
extern const ModelRow kModelRows[] = {
${rows}};
extern const std::size_t kModelRowCount = sizeof kModelRows / sizeof kModelRows[0];
} // namespace kvl::io::detail
")
  file(COPY_FILE ${out_cpp}.tmp ${out_cpp} ONLY_IF_DIFFERENT)
  file(REMOVE ${out_cpp}.tmp)
endfunction()
