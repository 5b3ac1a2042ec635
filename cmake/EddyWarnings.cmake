# The C warnings and definitions every Eddy build uses (-Werror with
# EDDY_WERROR). Included by the top-level CMakeLists.txt and by tests/gpu/fw.
add_compile_options(-Wall -Wextra -Wno-unused-parameter -Wshadow -Wformat=2
                    -Wstrict-prototypes -Wmissing-prototypes -fno-common)
add_compile_definitions(_GNU_SOURCE EDDY_VERSION="${PROJECT_VERSION}")
if(EDDY_WERROR)
  add_compile_options(-Werror)
endif()
