/*
 * stb_impl.c - the stb image decoders, resizer and PNG writer compiled once
 * for thumb.c (libstb-dev's headers; MIT / public domain). Only PNG, JPEG,
 * GIF and BMP are decoded, never from a path (STBI_NO_STDIO), and images
 * wider or taller than 65536 pixels are refused by the decoder itself;
 * thumb.c checks the pixel count from the header before decoding. Built with
 * -w (CMakeLists.txt): third-party code, not ours to warn about.
 */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS (1 << 16)
#include <stb/stb_image.h>

#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>
