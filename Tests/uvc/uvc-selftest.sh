#!/bin/bash
# uvc-selftest.sh: checks run against the cameras of uvc-camera, from the root
# of the checkout:
#   scripts/vm --uvc c920 --timeout 900 -- Tests/uvc/uvc-selftest.sh
# (--uvc c920,c270 for the checks of several cameras). Controls and refusals, sysfs identity, YUYV and MJPEG capture, then
# unplug/replug; with several cameras also both streaming at once and one
# unplugged while the other streams. Prints PASS/FAIL per check; exits with
# the number of failures. Writes only under /tmp (inside the VM).
D=${UVC_DEVICE:?run me through uvc-camera}
LOGF=${UVC_RESPONDER_LOG:-/tmp/uvc-responder.log}
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
get() { v4l2-ctl -d $D -C "$1" 2>&1 | awk -F': ' '{print $2}' | awk '{print $1}'; }

# xset ctrl NAME=V        one VIDIOC_S_CTRL
# xset ext NAME=V [...]   one VIDIOC_S_EXT_CTRLS with all of them, in that order
# prints "ok" or the errno name (EACCES, EILSEQ, ...)
XSET_PY='
import ctypes, errno, fcntl, os, struct, sys
dev, mode, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
ids = {}
for line in os.environ["UVC_CTRL_LIST"].splitlines():
    f = line.split()
    if len(f) > 2 and f[1].startswith("0x"):
        ids[f[0]] = int(f[1], 16)
kv = [(ids[k], int(v)) for k, v in (p.split("=") for p in pairs)]
ioc = lambda nr, size: (3 << 30) | (size << 16) | (ord("V") << 8) | nr
fd = os.open(dev, os.O_RDWR)
try:
    if mode == "ctrl":
        fcntl.ioctl(fd, ioc(28, 8), bytearray(struct.pack("<Ii", *kv[0])))
    else:
        arr = ctypes.create_string_buffer(20 * len(kv))
        for i, (cid, v) in enumerate(kv):
            struct.pack_into("<IIIq", arr, 20 * i, cid, 0, 0, v)
        fcntl.ioctl(fd, ioc(72, 32), bytearray(struct.pack("<IIIiIIQ", 0, len(kv), 0, 0, 0, 0,
                                                           ctypes.addressof(arr))))
    print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
'
xset() { UVC_CTRL_LIST=$L /usr/bin/python3 -c "$XSET_PY" "$D" "$@" 2>&1; }

check "driver is uvcvideo" bash -c "v4l2-ctl -d $D -D | grep -q 'Driver name *: uvcvideo'"
L=$(v4l2-ctl -d $D -l)
for c in zoom_absolute focus_absolute focus_automatic_continuous auto_exposure \
         exposure_time_absolute white_balance_temperature white_balance_automatic gain brightness; do
    check "control $c listed" grep -q " $c " <<<"$L"
done

v4l2-ctl -d $D -c zoom_absolute=200
check "zoom_absolute=200 reads back 200 (got $(get zoom_absolute))" test "$(get zoom_absolute)" = 200
v4l2-ctl -d $D -c zoom_absolute=1000 2>/dev/null
check "zoom_absolute=1000 clamps to 500 (got $(get zoom_absolute))" test "$(get zoom_absolute)" = 500

# focus: refused while focus_automatic_continuous=1
out=$(v4l2-ctl -d $D -c focus_absolute=100 2>&1); rc=$?
echo "  v4l2-ctl -c focus_absolute=100 (auto on): rc=$rc: $(echo $out)"
check "focus_absolute refused while auto focus on" test $rc -ne 0
r=$(xset ctrl focus_absolute=100)
check "S_CTRL focus_absolute with auto focus on: EACCES (got $r)" test "$r" = EACCES
r=$(xset ext focus_absolute=100)
check "S_EXT_CTRLS focus_absolute with auto focus on: EACCES (got $r)" test "$r" = EACCES
# same ioctl with the master switched in the SAME call: uvcvideo commits
# focus_absolute first, so the DEVICE refuses it (STALL + error code 2 -> EILSEQ)
out=$(v4l2-ctl -d $D -c focus_absolute=100,focus_automatic_continuous=0 2>&1); rc=$?
echo "  v4l2-ctl -c focus_absolute=100,focus_automatic_continuous=0: rc=$rc: $(echo $out)"
check "device STALLs focus_absolute while its auto focus is on (responder log)" \
    grep -q "SET_CUR ct.focus_absolute refused" "$LOGF"
r=$(xset ext focus_automatic_continuous=0 focus_absolute=100)
check "S_EXT_CTRLS auto focus off + focus_absolute in one call, auto first: EILSEQ (got $r)" test "$r" = EILSEQ
check "  ... and nothing changed: auto focus still on (got $(get focus_automatic_continuous))" \
    test "$(get focus_automatic_continuous)" = 1
v4l2-ctl -d $D -c focus_automatic_continuous=0
out=$(v4l2-ctl -d $D -c focus_absolute=100 2>&1); rc=$?
check "focus_absolute=100 accepted after auto off (rc=$rc $out)" test $rc -eq 0
check "focus_absolute reads back 100 (got $(get focus_absolute))" test "$(get focus_absolute)" = 100
v4l2-ctl -d $D -c focus_absolute=103
check "focus_absolute=103 stepped to 105 (got $(get focus_absolute))" test "$(get focus_absolute)" = 105

# exposure: only in manual mode (auto_exposure=1)
out=$(v4l2-ctl -d $D -c exposure_time_absolute=500 2>&1); rc=$?
check "exposure_time_absolute refused in aperture-priority mode (rc=$rc $(echo $out))" test $rc -ne 0
r=$(xset ctrl exposure_time_absolute=500)
check "S_CTRL exposure_time_absolute in aperture priority: EACCES (got $r)" test "$r" = EACCES
for m in 0 2; do
    r=$(xset ctrl auto_exposure=$m)
    check "auto_exposure=$m (not offered by the device): EINVAL (got $r)" test "$r" = EINVAL
done
r=$(xset ext auto_exposure=1 exposure_time_absolute=400)
check "S_EXT_CTRLS auto_exposure=1 + exposure_time_absolute=400 in one call: ok (got $r)" test "$r" = ok
check "  ... both set (got $(get auto_exposure) $(get exposure_time_absolute))" \
    test "$(get auto_exposure) $(get exposure_time_absolute)" = "1 400"
v4l2-ctl -d $D -c auto_exposure=3
v4l2-ctl -d $D -c auto_exposure=1 && v4l2-ctl -d $D -c exposure_time_absolute=500
check "exposure_time_absolute=500 in manual mode (got $(get exposure_time_absolute))" test "$(get exposure_time_absolute)" = 500

# white balance
out=$(v4l2-ctl -d $D -c white_balance_temperature=3000 2>&1); rc=$?
check "white_balance_temperature refused while auto WB on (rc=$rc $(echo $out))" test $rc -ne 0
r=$(xset ext white_balance_temperature=3000)
check "S_EXT_CTRLS white_balance_temperature with auto WB on: EACCES (got $r)" test "$r" = EACCES
r=$(xset ext white_balance_automatic=0 white_balance_temperature=3000)
check "S_EXT_CTRLS auto WB off + temperature in one call: EILSEQ (got $r)" test "$r" = EILSEQ
check "  ... and nothing changed: auto WB still on (got $(get white_balance_automatic))" \
    test "$(get white_balance_automatic)" = 1
v4l2-ctl -d $D -c white_balance_automatic=0 && v4l2-ctl -d $D -c white_balance_temperature=3000
check "white_balance_temperature=3000 with auto WB off (got $(get white_balance_temperature))" test "$(get white_balance_temperature)" = 3000

r=$(xset ctrl power_line_frequency=3)
check "power_line_frequency=3 (past the menu): ERANGE (got $r)" test "$r" = ERANGE
v4l2-ctl -d $D -c white_balance_temperature=9999
check "white_balance_temperature=9999 clamps to 6500 (got $(get white_balance_temperature))" \
    test "$(get white_balance_temperature)" = 6500

v4l2-ctl -d $D -c gain=77 -c brightness=33
check "gain=77 (got $(get gain))" test "$(get gain)" = 77
check "brightness=33 (got $(get brightness))" test "$(get brightness)" = 33
check "responder logged SET_CUR pu.gain <- 77" grep -q "SET_CUR pu.gain <- 77" "$LOGF"

# streaming
rm -f /tmp/x.raw
timeout 120 v4l2-ctl -d $D --stream-mmap --stream-count=30 --stream-to=/tmp/x.raw
sz=$(stat -c %s /tmp/x.raw 2>/dev/null || echo 0)
check "30 frames 640x480 YUYV captured ($sz bytes, want $((30*640*480*2)))" test "$sz" = $((30*640*480*2))
seqs=$(/usr/bin/python3 -c "
import struct
d=open('/tmp/x.raw','rb').read(); n=len(d)//614400
s=[struct.unpack_from('<Q', d, i*614400)[0] for i in range(n)]
print(' '.join(map(str, s)))" 2>/dev/null)
echo "  frame counters: $seqs"
check "frames are distinct (moving pattern)" bash -c "[[ \$(tr ' ' '\n' <<<'$seqs' | sort -u | wc -l) -eq 30 ]]"
v4l2-ctl -d $D -v width=1280,height=720,pixelformat=YUYV
rm -f /tmp/y.raw
timeout 120 v4l2-ctl -d $D --stream-mmap --stream-count=5 --stream-to=/tmp/y.raw
sz=$(stat -c %s /tmp/y.raw 2>/dev/null || echo 0)
check "5 frames 1280x720 YUYV captured ($sz bytes)" test "$sz" = $((5*1280*720*2))
v4l2-ctl -d $D -v width=640,height=480,pixelformat=YUYV

# ---------------------------------------------------------------------------
# identity in sysfs (what a server can key a stable camera id on)
# ---------------------------------------------------------------------------
usbdir() { readlink -f /sys/class/video4linux/${1#/dev/}/device/.. 2>/dev/null; }
U=$(usbdir $D)
echo "  $D -> $U: idVendor=$(cat $U/idVendor 2>/dev/null) idProduct=$(cat $U/idProduct 2>/dev/null) serial=$(cat $U/serial 2>/dev/null)"
check "sysfs: $D's USB device has serial \$UVC_SERIAL=${UVC_SERIAL:-unset}" \
    test "$(cat $U/serial 2>/dev/null)" = "${UVC_SERIAL:-unset}"
check "sysfs: idVendor:idProduct is \$UVC_USB_ID=${UVC_USB_ID:-unset}" \
    test "$(cat $U/idVendor 2>/dev/null):$(cat $U/idProduct 2>/dev/null)" = "${UVC_USB_ID:-unset}"
check "sysfs: USB path is \$UVC_USB_PATH=${UVC_USB_PATH:-unset}" test "${U##*/}" = "${UVC_USB_PATH:-unset}"
if [[ -d /dev/v4l/by-id ]]; then echo "  INFO: /dev/v4l/by-id: $(ls /dev/v4l/by-id | tr '\n' ' ')"
else echo "  INFO: no /dev/v4l/by-id in this VM (no udev): identify cameras through sysfs"; fi

# ---------------------------------------------------------------------------
# MJPEG
# ---------------------------------------------------------------------------
# frames of a v4l2-ctl --stream-to file: split at JPEG markers, decode with
# PIL, read the "uvc-frame N" COM segment, compare with the pre-encoded JPEGs
MJPEG_PY='
import glob, io, os, struct, sys
from PIL import Image
jdir = os.environ["UVC_MJPEG_DIR"]

def split(d):
    out, i = [], 0
    while i + 4 <= len(d):
        if d[i:i + 2] != b"\xff\xd8":
            raise ValueError("no SOI at byte %d" % i)
        j = i + 2
        while True:                       # marker segments up to SOS
            if d[j] != 0xFF:
                raise ValueError("bad marker at byte %d" % j)
            m = d[j + 1]
            n = struct.unpack(">H", d[j + 2:j + 4])[0]
            j += 2 + n
            if m == 0xDA:
                break
        while True:                       # entropy-coded data up to EOI
            k = d.index(b"\xff", j)
            m = d[k + 1]
            j = k + 2
            if m == 0xD9:
                break
        out.append(d[i:j])
        i = j
    return out

def counter(f):
    j = 2
    while f[j + 1] != 0xDA:
        n = struct.unpack(">H", f[j + 2:j + 4])[0]
        if f[j + 1] == 0xFE and f[j + 4:j + 2 + n].startswith(b"uvc-frame "):
            return int(f[j + 14:j + 2 + n])
        j += 2 + n
    return None

for arg in sys.argv[1:]:
    size, fn = arg.split(":", 1)
    w, h = (int(v) for v in size.split("x"))
    cycle = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(jdir, size, "[0-9]*.jpg")))]
    try:
        frames = split(open(fn, "rb").read())
    except Exception as e:
        print(size, 0, 0, 0, 0, 0, "split-error:%s" % e)
        continue
    nums, good, exact, base = [], 0, 0, 0
    for f in frames:
        n = counter(f)
        nums.append(-1 if n is None else n)
        try:
            im = Image.open(io.BytesIO(f))
            im.load()
            good += im.size == (w, h) and im.format == "JPEG"
        except Exception:
            pass
        base += b"\xff\xc0" in f and b"\xff\xc2" not in f
        if n is not None and cycle:       # COM after APP0 (JFIF), else after SOI
            c = cycle[n % len(cycle)]
            at = 4 + struct.unpack(">H", c[4:6])[0] if c[2:4] == b"\xff\xe0" else 2
            com = b"uvc-frame %d" % n
            exact += f == c[:at] + b"\xff\xfe" + struct.pack(">H", len(com) + 2) + com + c[at:]
    print(size, len(frames), good, base, exact, max([len(f) for f in frames] or [0]),
          ",".join(map(str, nums)))
'
if [[ -n ${UVC_MJPEG_DIR:-} ]]; then
    fl=$(v4l2-ctl -d $D --list-formats-ext)
    sizes=$(awk '/MJPG/{m=1;next} /\[[0-9]+\]/{m=0} m&&/Size/{s=$3} m&&/Interval/{print s, $3}' <<<"$fl" | tr '\n' ' ')
    echo "  MJPEG sizes/intervals: $sizes"
    check "MJPEG offered at 640x480, 1280x720, 1920x1080, each at 30 and 15 fps" \
        test "$sizes" = "640x480 0.033s 640x480 0.067s 1280x720 0.033s 1280x720 0.067s 1920x1080 0.033s 1920x1080 0.067s "
    args=()
    for sz in 640x480 1280x720 1920x1080; do
        v4l2-ctl -d $D -v width=${sz%x*},height=${sz#*x},pixelformat=MJPG
        rm -f /tmp/m$sz.mjpg
        timeout 120 v4l2-ctl -d $D --stream-mmap --stream-count=10 --stream-to=/tmp/m$sz.mjpg
        args+=("$sz:/tmp/m$sz.mjpg")
    done
    res=$(/usr/bin/python3 -c "$MJPEG_PY" "${args[@]}" 2>&1)
    for sz in 640x480 1280x720 1920x1080; do
        read -r _ n good base exact maxlen nums <<<"$(grep "^$sz " <<<"$res")"
        echo "  $sz: frames ${n:-?}, largest $maxlen bytes, counters $nums"
        check "MJPEG $sz: 10 frames captured (got ${n:-none})" test "${n:-0}" = 10
        check "MJPEG $sz: all decode (PIL) as ${sz} JPEGs (got ${good:-0})" test "${good:-0}" = 10
        check "MJPEG $sz: all baseline (SOF0) (got ${base:-0})" test "${base:-0}" = 10
        check "MJPEG $sz: frame counters (COM uvc-frame N) strictly increase" \
            /usr/bin/python3 -c "import sys; n=[int(x) for x in sys.argv[1].split(',')]; sys.exit(not(len(n)==10 and min(n)>=0 and all(b>a for a,b in zip(n,n[1:]))))" "${nums:-x}"
        check "MJPEG $sz: bytes identical to the camera's pre-encoded JPEG + counter (got ${exact:-0}/10)" test "${exact:-0}" = 10
        [[ $sz == 1920x1080 ]] && MAX1080=${maxlen:-0}
        [[ $sz == 1280x720 ]] && first=${nums%%,*}
    done
    # one frame, byte for byte, as uvc-camera-ctl jpeg rebuilds it from its counter
    /usr/bin/python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(d[:d.index(b"\xff\xd9") + 2])' /tmp/m1280x720.mjpg > /tmp/m-first.jpg 2>/dev/null
    "${UVC_CAMERA_CTL:-uvc-camera-ctl}" jpeg 1280x720 "${first:-0}" > /tmp/m-ctl.jpg
    check "uvc-camera-ctl jpeg 1280x720 ${first:-?} gives the captured frame ${first:-?} byte for byte" \
        cmp -s /tmp/m-first.jpg /tmp/m-ctl.jpg
    # isochronous budget: 3 x 1024 bytes per 125 us microframe, minus a
    # 12-byte payload header per packet = 24.48 MB/s; 1080p30 needs < 816000 bytes/frame
    check "MJPEG 1920x1080 frames (largest ${MAX1080:-?} bytes) fit 3x1024 bytes/microframe at 30 fps (< 816000)" \
        test "${MAX1080:-999999999}" -lt 816000
    v4l2-ctl -d $D -v width=1920,height=1080,pixelformat=MJPG -p 30 >/dev/null
    fps=$(timeout 120 v4l2-ctl -d $D --stream-mmap --stream-count=61 --verbose 2>&1 \
        | awk '/ts: /{for(i=1;i<NF;i++) if($i=="ts:") t[n++]=$(i+1)} END{if(n>1) printf "%.1f", (n-1)/(t[n-1]-t[0]); else print 0}')
    echo "  MJPEG 1920x1080@30 measured: $fps fps over 60 frame intervals"
    check "MJPEG 1920x1080 streams at >= 20 fps at 30 fps nominal (got $fps)" \
        awk -v f="$fps" 'BEGIN{exit !(f >= 20)}'
    v4l2-ctl -d $D -v width=640,height=480,pixelformat=YUYV -p 30
else
    echo "  SKIP: MJPEG checks (uvc-camera --no-mjpeg)"
fi

# ---------------------------------------------------------------------------
# several cameras
# ---------------------------------------------------------------------------
read -ra DEVS <<<"${UVC_DEVICES:-$D}"
read -ra SERS <<<"${UVC_SERIALS:-}"
read -ra MODS <<<"${UVC_MODELS:-}"
seq_of() { /usr/bin/python3 -c "
import struct, sys
d = open(sys.argv[1], 'rb').read(); fs = int(sys.argv[2])
print(' '.join(str(struct.unpack_from('<Q', d, i * fs)[0]) for i in range(len(d) // fs)))" "$@" 2>/dev/null; }
if [[ ${#DEVS[@]} -ge 2 ]]; then
    echo "  cameras: ${DEVS[*]} serials ${SERS[*]} models ${MODS[*]}"
    check "${#DEVS[@]} distinct nodes" test "$(printf '%s\n' "${DEVS[@]}" | sort -u | wc -l)" = ${#DEVS[@]}
    for i in "${!DEVS[@]}"; do
        u=$(usbdir ${DEVS[$i]})
        check "camera $i (${DEVS[$i]}): sysfs serial ${SERS[$i]:-?} (got $(cat $u/serial 2>/dev/null), USB ${u##*/})" \
            test "$(cat $u/serial 2>/dev/null)" = "${SERS[$i]:-?}"
        l=$(v4l2-ctl -d ${DEVS[$i]} -l)
        case ${MODS[$i]:-} in
        c270) check "camera $i (c270): exposure controls, no zoom_absolute, no focus controls" \
                  bash -c "grep -q ' exposure_time_absolute ' <<<\"\$0\" && ! grep -qE ' (zoom_absolute|focus_absolute|focus_automatic_continuous) ' <<<\"\$0\"" "$l";;
        c920) check "camera $i (c920): zoom_absolute, focus_absolute and focus_automatic_continuous" \
                  bash -c "grep -q ' zoom_absolute ' <<<\"\$0\" && grep -q ' focus_absolute ' <<<\"\$0\" && grep -q ' focus_automatic_continuous ' <<<\"\$0\"" "$l";;
        esac
    done
    check "serials distinct" test "$(printf '%s\n' "${SERS[@]}" | sort -u | wc -l)" = ${#DEVS[@]}
    # all streaming at once: 640x480 YUYV on each, 30 frames
    pids=()
    for i in "${!DEVS[@]}"; do
        v4l2-ctl -d ${DEVS[$i]} -v width=640,height=480,pixelformat=YUYV -p 30
        rm -f /tmp/multi$i.raw
        timeout 120 v4l2-ctl -d ${DEVS[$i]} --stream-mmap --stream-count=30 --stream-to=/tmp/multi$i.raw 2>/dev/null &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait $p; done
    for i in "${!DEVS[@]}"; do
        sz=$(stat -c %s /tmp/multi$i.raw 2>/dev/null || echo 0)
        s=$(seq_of /tmp/multi$i.raw 614400)
        check "streaming at once: camera $i got 30 distinct frames ($sz bytes; counters ${s:0:40}...)" \
            bash -c "[[ $sz == $((30*614400)) && \$(tr ' ' '\n' <<<'$s' | sort -nu | wc -l) == 30 ]]"
    done
    # camera 1 unplugged and replugged while camera 0 streams on
    LOG0=${UVC_RESPONDER_LOG:-/tmp/uvc-responder.log}
    n0=$(wc -l < "$LOG0")
    rm -f /tmp/multi-bg.raw
    timeout 120 v4l2-ctl -d ${DEVS[0]} --stream-mmap --stream-count=100000 --stream-to=/tmp/multi-bg.raw 2>/dev/null &
    bg=$!
    for _ in $(seq 1 300); do tail -n +$((n0+1)) "$LOG0" | grep -q "^[0-9.]* STREAMON" && break; sleep 0.1; done
    uvc-camera-ctl unplug 1; r1=$?
    new1=$(uvc-camera-ctl plug 1); r2=$?
    sz0=$(stat -c %s /tmp/multi-bg.raw 2>/dev/null || echo 0)
    for _ in $(seq 1 200); do       # 10 more frames after the replug (bounded: 20 s)
        (( $(stat -c %s /tmp/multi-bg.raw 2>/dev/null || echo 0) >= sz0 + 10*614400 )) && break
        kill -0 $bg 2>/dev/null || break
        sleep 0.1
    done
    kill -0 $bg 2>/dev/null; alive=$?
    sz1=$(stat -c %s /tmp/multi-bg.raw 2>/dev/null || echo 0)
    kill $bg 2>/dev/null; wait $bg 2>/dev/null
    s=$(seq_of /tmp/multi-bg.raw 614400)
    gap=$(awk '{m=0; for(i=2;i<=NF;i++) if($i-$(i-1)>m) m=$i-$(i-1); print m, NF}' <<<"$s")
    echo "  camera 1 unplug rc=$r1, plug rc=$r2 -> $new1; camera 0 meanwhile: ${gap#* } frames, largest counter step ${gap%% *}"
    check "camera 1 unplugged and replugged (rc $r1 $r2) while camera 0 streamed on ($(( (sz1-sz0)/614400 )) frames after the replug, largest counter step ${gap%% *})" \
        bash -c "[[ '$r1 $r2 $alive' == '0 0 0' && $sz1 -ge $((sz0 + 10*614400)) && ${gap%% *} -le 30 ]]"
    check "camera 1 back with serial ${SERS[1]:-?}" test "$(cat $(usbdir ${new1:-/dev/none})/serial 2>/dev/null)" = "${SERS[1]:-?}"
fi

# ---------------------------------------------------------------------------
# unplug / replug (last: the node numbers change)
# ---------------------------------------------------------------------------
CTL=${UVC_CAMERA_CTL:-uvc-camera-ctl}
# all controls at their defaults? (prints the ones that are not)
nondefault() { v4l2-ctl -d $1 -l | awk '/default=/{d="";v="";for(i=1;i<=NF;i++){if($i~/^default=/)d=substr($i,9);if($i~/^value=/)v=substr($i,7)} if(d!=v) printf "%s=%s(default %s) ", $1, v, d}'; }
# a capture client as an event-loop server would be: poll() + non-blocking
# DQBUF/QBUF, buffers flagged ERROR requeued; prints "streaming" after 3
# frames, then how the stream ended and what VIDIOC_QUERYCAP on the same fd
# then returns
STREAM_PY='
import errno, fcntl, mmap, os, select, struct, sys
ioc = lambda d, nr, size: (d << 30) | (size << 16) | (ord("V") << 8) | nr
REQBUFS, QUERYBUF, QBUF, DQBUF = ioc(3, 8, 20), ioc(3, 9, 88), ioc(3, 15, 88), ioc(3, 17, 88)
STREAMON, QUERYCAP = ioc(1, 18, 4), ioc(2, 0, 104)
en = lambda e: errno.errorcode.get(e.errno, str(e.errno))
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NONBLOCK)
rb = bytearray(struct.pack("<5I", 4, 1, 1, 0, 0))
fcntl.ioctl(fd, REQBUFS, rb)
maps = []
for i in range(struct.unpack_from("<I", rb)[0]):
    b = bytearray(88); struct.pack_into("<II", b, 0, i, 1); struct.pack_into("<I", b, 60, 1)
    fcntl.ioctl(fd, QUERYBUF, b)
    maps.append(mmap.mmap(fd, struct.unpack_from("<I", b, 72)[0], offset=struct.unpack_from("<I", b, 64)[0]))
    fcntl.ioctl(fd, QBUF, b)
fcntl.ioctl(fd, STREAMON, struct.pack("<I", 1))
frames, errs, how = 0, 0, "?"
p = select.poll(); p.register(fd, select.POLLIN | select.POLLPRI)
while True:
    r = p.poll(20000)
    if not r:
        how = "poll timeout"; break
    m = r[0][1]
    if m & (select.POLLERR | select.POLLHUP):
        how = "poll revents" + "".join(" " + k for k in ("POLLIN", "POLLPRI", "POLLERR", "POLLHUP") if m & getattr(select, k))
        break
    b = bytearray(88); struct.pack_into("<II", b, 0, 0, 1); struct.pack_into("<I", b, 60, 1)
    try:
        fcntl.ioctl(fd, DQBUF, b)
    except OSError as e:
        if e.errno == errno.EAGAIN:
            continue
        how = "DQBUF " + en(e); break
    if struct.unpack_from("<I", b, 12)[0] & 0x40:
        errs += 1
    else:
        frames += 1
    if frames == 3 and not errs:
        print("streaming", flush=True)
    try:
        fcntl.ioctl(fd, QBUF, b)
    except OSError as e:
        how = "QBUF " + en(e); break
try:
    fcntl.ioctl(fd, QUERYCAP, bytearray(104)); q = "ok"
except OSError as e:
    q = en(e)
print("after %d frames (%d buffers flagged ERROR): %s; then QUERYCAP: %s" % (frames, errs, how, q), flush=True)
'
businfo() { v4l2-ctl -d $1 -D 2>/dev/null | awk -F': ' '/Bus info/{print $2; exit}'; }
BI=$(businfo $D)
before=$(nondefault $D)
echo "  controls not at default before the unplug: $before"
check "some controls differ from their defaults before the unplug" test -n "$before"
last=$(seq_of /tmp/x.raw 614400 | awk '{print $NF}')
rm -f /tmp/unplug.out
timeout 120 /usr/bin/python3 -c "$STREAM_PY" $D >/tmp/unplug.out 2>&1 &
sp=$!
for _ in $(seq 1 300); do grep -q streaming /tmp/unplug.out && break; sleep 0.1; done
t0=$(date +%s.%N)
"$CTL" unplug; r=$?
t1=$(date +%s.%N)
echo "  unplug took $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s"
check "uvc-camera-ctl unplug: rc 0 (got $r)" test $r = 0
wait $sp; src=$?
out=$(grep after /tmp/unplug.out)
echo "  streaming client (poll + DQBUF): rc=$src: $(tr '\n' ' ' < /tmp/unplug.out)"
check "the streaming client saw the stream end, not a timeout (rc=$src)" \
    bash -c "[[ $src == 0 && -n '$out' && '$out' != *timeout* ]]"
check "  ... and its fd then gets ENODEV" bash -c "[[ '$out' == *'QUERYCAP: ENODEV' ]]"
check "$D is gone" test ! -e $D
check "USB device $UVC_USB_PATH is gone from sysfs" test ! -e /sys/bus/usb/devices/${UVC_USB_PATH:-none}
check "uvc-camera-ctl device: no node while unplugged" bash -c "! '$CTL' device >/dev/null"
check "responder saw the node go and is waiting" grep -q "gone (.*): unplugged" "$LOGF"
t0=$(date +%s.%N)
D2=$("$CTL" plug); r=$?
t1=$(date +%s.%N)
echo "  plug took $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s: camera back as $D2 (was $D)"
check "uvc-camera-ctl plug: rc 0 and a node (got $r, '$D2')" bash -c "[[ $r == 0 && -c '$D2' ]]"
check "nothing held the old node: same node number again ($D2, was $D)" test "$D2" = "$D"
U2=$(usbdir $D2)
BI2=$(businfo $D2)
check "replugged camera: same serial $UVC_SERIAL, USB id, USB path and bus_info $BI (got $(cat $U2/serial 2>/dev/null) $(cat $U2/idVendor 2>/dev/null):$(cat $U2/idProduct 2>/dev/null) ${U2##*/} $BI2)" \
    test "$(cat $U2/serial 2>/dev/null) $(cat $U2/idVendor 2>/dev/null):$(cat $U2/idProduct 2>/dev/null) ${U2##*/} $BI2" = "$UVC_SERIAL $UVC_USB_ID $UVC_USB_PATH $BI"
after=$(nondefault $D2)
check "after replug every control is at its default (settings lost with power; non-default: '${after}')" test -z "$after"
check "responder logged the replug" grep -q "replugged, controls at defaults" "$LOGF"
rm -f /tmp/r.raw
timeout 120 v4l2-ctl -d $D2 --stream-mmap --stream-count=5 --stream-to=/tmp/r.raw
s=$(seq_of /tmp/r.raw 614400)
echo "  frame counters after replug: $s (last before: $last)"
check "capture after replug: 5 frames 640x480 YUYV" test "$(stat -c %s /tmp/r.raw 2>/dev/null || echo 0)" = $((5*614400))
check "  ... frame counter kept counting across the replug" bash -c "[[ -n '$s' && ${s%% *} -gt ${last:-999999999} ]]"

# again with v4l2-ctl streaming (blocking DQBUF) and another process holding
# the node open
exec 7<"$D2"
n0=$(wc -l < "$LOGF")
rm -f /tmp/unplug.err
timeout 120 v4l2-ctl -d $D2 --stream-mmap --stream-count=100000 >/dev/null 2>/tmp/unplug.err &
sp=$!
for _ in $(seq 1 300); do tail -n +$((n0+1)) "$LOGF" | grep -q "^[0-9.]* STREAMON" && break; sleep 0.1; done
"$CTL" unplug; r=$?
check "unplug with $D2 held open and streaming: rc 0 (got $r)" test $r = 0
wait $sp; src=$?
err=$(grep -o 'VIDIOC_[A-Z]*: failed: [A-Za-z ]*' /tmp/unplug.err | head -1)
echo "  v4l2-ctl --stream-mmap: rc=$src: $(tr '\n' ' ' < /tmp/unplug.err | tr -s '<' | cut -c1-300)"
check "  ... the streaming v4l2-ctl stopped, not a timeout (rc=$src${err:+, '$err'})" \
    bash -c "[[ $src != 124 ]]"
check "  ... $D2 is gone although held open" test ! -e "$D2"
r=$(/usr/bin/python3 -c '
import errno, fcntl
try:
    fcntl.ioctl(7, (2 << 30) | (104 << 16) | (ord("V") << 8) | 0, bytearray(104)); print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))')
check "  ... VIDIOC_QUERYCAP on the held fd: ENODEV (got $r)" test "$r" = ENODEV
D3=$("$CTL" plug); r=$?
echo "  with the old node held open the camera came back as $D3 (was $D2); nodes now: $(ls /dev/video* | tr '\n' ' ')"
check "plug with the old node held: rc 0 and a node (got $r, '$D3')" bash -c "[[ $r == 0 && -c '$D3' ]]"
check "  ... under another number ($D3, was $D2)" test "$D3" != "$D2"
check "  ... same serial" test "$(cat $(usbdir ${D3:-/dev/none})/serial 2>/dev/null)" = "$UVC_SERIAL"
rm -f /tmp/r3.raw
timeout 120 v4l2-ctl -d $D3 --stream-mmap --stream-count=3 --stream-to=/tmp/r3.raw
check "  ... capture works on $D3" test "$(stat -c %s /tmp/r3.raw 2>/dev/null || echo 0)" = $((3*614400))
exec 7<&-

echo "$fails check(s) failed"
exit $fails
