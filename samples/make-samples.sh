#!/usr/bin/env bash
# Makes the sample streams in this folder with ffmpeg (Debian's): 6 seconds of a test pattern
# and a tone, small enough to commit. Run from anywhere: samples/make-samples.sh
#   hls-ts/      master + two variants, MPEG-TS segments
#   hls-fmp4/    fMP4 segments with an EXT-X-MAP init section
#   hls-byterange/  one file per variant, segments addressed by EXT-X-BYTERANGE
#   hls-aes/     AES-128 encrypted segments, key at hls-aes/key.bin (a fixed demo key)
#   dash/        a DASH MPD with SegmentTemplate
set -euo pipefail
cd "$(dirname "$0")"
command -v ffmpeg >/dev/null || { echo "needs ffmpeg (apt-get install ffmpeg)" >&2; exit 1; }
rm -rf hls-ts hls-fmp4 hls-byterange hls-aes dash
mkdir -p hls-ts hls-fmp4 hls-byterange hls-aes dash
src=(-f lavfi -i "testsrc2=size=320x180:rate=25:duration=6" -f lavfi -i "sine=frequency=440:duration=6")
enc=(-c:v libx264 -preset veryfast -profile:v baseline -g 50 -keyint_min 50 -sc_threshold 0 -pix_fmt yuv420p -c:a aac -b:a 64k -ac 2 -ar 44100 -bitexact)
q=(-hide_banner -loglevel error -y)

for v in low:160k:320x180 high:320k:480x270; do
    IFS=: read -r name rate size <<<"$v"
    ffmpeg "${q[@]}" "${src[@]}" "${enc[@]}" -b:v "$rate" -s "$size" -f hls -hls_time 2 -hls_playlist_type vod \
        -hls_segment_filename "hls-ts/$name-%03d.ts" "hls-ts/$name.m3u8"
done
cat > hls-ts/master.m3u8 <<'M3U'
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-STREAM-INF:BANDWIDTH=260000,RESOLUTION=320x180,CODECS="avc1.42c00d,mp4a.40.2"
low.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=420000,RESOLUTION=480x270,CODECS="avc1.42c015,mp4a.40.2"
high.m3u8
M3U

ffmpeg "${q[@]}" "${src[@]}" "${enc[@]}" -b:v 160k -f hls -hls_time 2 -hls_playlist_type vod \
    -hls_segment_type fmp4 -hls_fmp4_init_filename init.mp4 -hls_segment_filename "hls-fmp4/seg-%03d.m4s" hls-fmp4/index.m3u8

ffmpeg "${q[@]}" "${src[@]}" "${enc[@]}" -b:v 160k -f hls -hls_time 2 -hls_playlist_type vod \
    -hls_flags single_file hls-byterange/index.m3u8

printf '0123456789abcdef' > hls-aes/key.bin  # a fixed demo key: these samples protect nothing
printf 'key.bin\nhls-aes/key.bin\n00000000000000000000000000000001\n' > hls-aes/keyinfo
ffmpeg "${q[@]}" "${src[@]}" "${enc[@]}" -b:v 160k -f hls -hls_time 2 -hls_playlist_type vod \
    -hls_key_info_file hls-aes/keyinfo -hls_segment_filename "hls-aes/seg-%03d.ts" hls-aes/index.m3u8
rm hls-aes/keyinfo

ffmpeg "${q[@]}" "${src[@]}" "${enc[@]}" -b:v 160k -f dash -seg_duration 2 -use_template 1 -use_timeline 0 \
    -init_seg_name 'init-$RepresentationID$.m4s' -media_seg_name 'chunk-$RepresentationID$-$Number%05d$.m4s' dash/manifest.mpd

du -sh . >&2
