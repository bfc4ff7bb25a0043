# A latency distribution in HdrHistogram's style: latency against percentile, the percentile
# axis on a log scale of 1/(1 - p) so that each "nine" gets the same width, one curve per
# backend. Usage: gnuplot -c percentiles.gp DATA OUTPUT TITLE COLOURS YLABEL
# DATA: a header line, then rows: percentile, 1/(1 - p), one latency column (µs) per backend.
# COLOURS: one colour per backend column, in column order. Values under 0.1 µs are drawn at
# 0.1 µs (the latency axis is logarithmic); the data file keeps them as measured.
data = ARG1
set encoding utf8
set terminal svg size 800,460 dynamic font "Helvetica,12" background "white" noenhanced
set output ARG2
set title ARG3
set datafile separator "\t"
set datafile missing "-"
set logscale x 10
set logscale y 10
set xrange [1:10000]
set xtics ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000)
set mxtics 10
set xlabel "percentile"
set ylabel ARG5
set grid xtics ytics mytics lc rgb "#dddddd"
set key top left reverse Left
shown(v) = v < 0.1 ? 0.1 : v
# "for [i=3:*]" asks for one column past the last, so a missing colour must still be a colour.
colour(n) = n <= words(ARG4) ? word(ARG4, n) : "black"
plot for [i=3:*] data using 2:(shown(column(i))) with lines lw 2 lc rgb colour(i - 2) title columnheader(i)
