# Writes a C++ source holding resources/models.json and gpus.json as raw string literals,
# so every binary (kvprobe on the GPU machine included) carries the same catalog.
file(READ ${MODELS} models_text)
file(READ ${GPUS} gpus_text)
string(FIND "${models_text}" ")kvl_json\"" bad1)
string(FIND "${gpus_text}" ")kvl_json\"" bad2)
if(NOT bad1 EQUAL -1 OR NOT bad2 EQUAL -1)
  message(FATAL_ERROR "catalog text contains the raw-string delimiter")
endif()
file(WRITE ${OUT}.tmp "// Generated from resources/*.json by embed_catalog.cmake; do not edit.\n#include <string_view>\nnamespace kvl::io::detail {\nextern const std::string_view kModelsJson = R\"kvl_json(${models_text})kvl_json\";\nextern const std::string_view kGpusJson = R\"kvl_json(${gpus_text})kvl_json\";\n}\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
