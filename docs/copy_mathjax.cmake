# Copies the parts of MathJax 2 that the site's pages load into the site (cmake -P, with FROM
# the installed MathJax and TO the site's mathjax folder): the loader, its extensions, the TeX
# input, the HTML-CSS output with the TeX fonts, and the English messages. About 4 MB instead of
# the 50 MB of the whole package.
foreach(part MathJax.js extensions jax/input/TeX jax/element jax/output/HTML-CSS/config.js
             jax/output/HTML-CSS/jax.js jax/output/HTML-CSS/imageFonts.js
             jax/output/HTML-CSS/autoload jax/output/HTML-CSS/fonts/TeX
             fonts/HTML-CSS/TeX/woff fonts/HTML-CSS/TeX/otf localization/en)
  if(NOT EXISTS "${FROM}/${part}")
    message(FATAL_ERROR "MathJax in ${FROM} has no ${part}")
  endif()
  if(IS_DIRECTORY "${FROM}/${part}")
    file(GLOB_RECURSE files FOLLOW_SYMLINKS RELATIVE "${FROM}" "${FROM}/${part}/*")
  else()
    set(files "${part}")
  endif()
  foreach(file IN LISTS files)  # the files' contents, also where the package links them
    configure_file("${FROM}/${file}" "${TO}/${file}" COPYONLY)
  endforeach()
endforeach()
