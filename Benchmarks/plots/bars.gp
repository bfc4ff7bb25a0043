# Grouped bars: one group per row (an operation), one bar per backend column, on a log scale.
# Usage: gnuplot -c bars.gp DATA OUTPUT TITLE COLOURS YLABEL
# DATA: a header line, then rows: a label, one value column per backend ("-" where a backend
# has no equivalent). COLOURS: one colour per backend column, in column order.
data = ARG1
set encoding utf8
set terminal svg size 900,480 dynamic font "Helvetica,12" background "white" noenhanced
set output ARG2
set title ARG3
set datafile separator "\t"
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 noborder
set boxwidth 0.9
set logscale y 10
set yrange [10:*]
set format y "%.0s%c"
set ylabel ARG5
set xtics nomirror rotate by 25 right
set grid ytics lc rgb "#dddddd"
set key top left reverse Left
colour(n) = n <= words(ARG4) ? word(ARG4, n) : "black"
plot for [i=2:*] data using i:xtic(1) lc rgb colour(i - 1) title columnheader(i)
