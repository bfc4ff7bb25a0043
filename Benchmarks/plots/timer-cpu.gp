# CPU per timer fire: against the timer's rate for one loop (left), and for many loops in one
# process (right), one colour per backend in both.
# Usage: gnuplot -c timer-cpu.gp RATES LOOPS OUTPUT TITLE COLOURS
# RATES: a header line, then rows: rate (Hz), one CPU-per-fire column (µs) per backend.
# LOOPS: a header line, then one row: the case, one CPU-per-fire column per backend (same order).
set encoding utf8
set terminal svg size 980,460 dynamic font "Helvetica,12" background "white" noenhanced
set output ARG3
set datafile separator "\t"
set datafile missing "-"
colour(n) = n <= words(ARG5) ? word(ARG5, n) : "black"
set multiplot layout 1,2 title ARG4
stats ARG1 using 1 every ::1 nooutput
set logscale x 10
set xrange [STATS_min / 1.5 : STATS_max * 1.5]
set xlabel "timer rate, one loop (Hz)"
set ylabel "CPU per fire (µs)"
set yrange [0:*]
set grid xtics ytics lc rgb "#dddddd"
set key top right
plot for [i=2:*] ARG1 using 1:i:xtic(1) with linespoints lw 2 pt 7 ps 0.8 lc rgb colour(i - 1) title columnheader(i)
unset logscale x
unset xlabel
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 noborder
set boxwidth 0.9
set grid noxtics ytics
set xrange [*:*]
set key below
plot for [i=2:*] ARG2 using i:xtic(1) lc rgb colour(i - 1) title columnheader(i)
unset multiplot
