# Shared by the bench/*/run_*.sh scripts that read our events.jsonl.
# `summarise` reads the global `warmup` (step events to skip).

med() { sort -g | awk '{a[NR]=$1} END {if (!NR) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -1; }

# Step events of an events.jsonl after the warmup: "step_ms sps comm_ms wall_sps" medians (comm "nan" when
# the binary does not write comm_time_s). wall_sps: samples over the span of the event timestamps
# (t, ms), i.e. everything between steps included (per-rank gather, event writing, control agreement).
summarise() {
  jq -s -r --argjson w "$warmup" '
    def median: sort | if length == 0 then null elif length % 2 == 1 then .[(length - 1) / 2]
                       else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    [.[] | select(.type == "step")] | sort_by(.step) | .[$w:] as $s
    | ($s | map(.step_time_s) | median) as $st
    | ($s | map([.samples_per_s[]] | add) | median) as $sps
    | ($s | map(.comm_time_s // empty) | median) as $comm
    | ($s | map([.samples | .[]] | add)) as $cum
    | (if ($s | length) > 1 then ($cum[-1] - $cum[0]) / (($s[-1].t - $s[0].t) / 1000) else null end) as $wall
    | "\($st * 1000) \($sps) \(if $comm == null then "nan" else $comm * 1000 end) \($wall // "nan")"' "$1"
}
