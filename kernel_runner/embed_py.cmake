# cmake -DIN=file.py -DOUT=file.c -DNAME=symbol -P embed_py.cmake
# Writes `const char NAME[]` holding the bytes of IN and a NUL.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from ${IN} by embed_py.cmake; do not edit. */\nconst char ${NAME}[] = {\n${bytes}0x00};\n")
