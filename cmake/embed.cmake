# Writes the text file IN as one C++ raw string literal to OUT, for a source to #include (the
# mini-GPT's explain page, minigpt/explain.html). Run by the build: cmake -DIN=… -DOUT=… -P.
# The delimiter must not occur in the text; a file holding it stops the build with its name.
if(NOT DEFINED IN OR NOT DEFINED OUT)
  message(FATAL_ERROR "embed.cmake: give -DIN=<text file> -DOUT=<.inc file>")
endif()
file(READ "${IN}" text)
string(FIND "${text}" ")WB_EMBED\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "embed.cmake: ${IN} contains the raw string's delimiter )WB_EMBED\"")
endif()
file(WRITE "${OUT}.tmp" "R\"WB_EMBED(${text})WB_EMBED\"\n")
file(RENAME "${OUT}.tmp" "${OUT}")
