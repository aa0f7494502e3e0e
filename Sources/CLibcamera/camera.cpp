// One acquired camera: its one video stream configured, its buffers mapped, requests cycled.
// libcamera completes a request on its own thread (`completed`): the request is queued and the
// eventfd written; the capture thread takes it (`lc_camera_next`), reads its metadata there,
// and gives it back (`lc_camera_queue`) with whatever controls were set meanwhile.

#include "private.h"
#include "compat.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace libcamera;

void lc_camera::completed(Request *request) {
    {
        std::lock_guard<std::mutex> guard(lock);
        done.push_back(request);
    }
    uint64_t one = 1;
    ssize_t written = write(completions, &one, sizeof one);
    (void)written;  // an eventfd's counter only fails to add at 2^64 - 1
}

void lc_camera::unmap() {
    for (auto &m : mappings) munmap(m.base, m.length);
    mappings.clear();
    data.clear();
    requests.clear();
    if (allocator && stream) allocator->free(stream);
    allocator.reset();
    stream = nullptr;
}

// The camera's control `name` (and its ControlInfo), or null when the camera lacks it.
static const ControlId *find(lc_camera *c, const char *name, const ControlInfo **info) {
    for (const auto &[id, i] : c->camera->controls()) {
        if (id->name() == name) {
            if (info) *info = &i;
            return id;
        }
    }
    return nullptr;
}

// Any control libcamera defines by `name` (metadata carries some a camera does not take: AfState).
static const ControlId *known(lc_camera *c, const char *name) {
    if (const ControlId *id = find(c, name, nullptr)) return id;
    for (const auto &[number, id] : controls::controls) {
        if (id->name() == name) return id;
    }
    return nullptr;
}

extern "C" int lc_camera_open(lc_manager *m, const char *id, lc_camera **out) {
    try {
        if (!m->started) return -ENODEV;
        std::shared_ptr<Camera> camera = m->manager->get(id);
        if (!camera) return -ENODEV;
        int r = camera->acquire();
        if (r < 0) return r;
        auto c = std::make_unique<lc_camera>();
        c->camera = camera;
        c->completions = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (c->completions < 0) {
            int e = errno;
            camera->release();
            return -e;
        }
        camera->requestCompleted.connect(c.get(), &lc_camera::completed);
        *out = c.release();
        return 0;
    } catch (...) {
        return -EIO;
    }
}

extern "C" void lc_camera_close(lc_camera *c) {
    if (!c) return;
    try {
        if (c->running) lc_camera_stop(c);
        c->camera->requestCompleted.disconnect(c);
        c->unmap();
        c->config.reset();
        c->camera->release();
    } catch (...) {
    }
    close(c->completions);
    delete c;
}

extern "C" int lc_camera_configure(lc_camera *c, uint32_t fourcc, uint32_t width, uint32_t height, uint32_t buffers, lc_stream *out) {
    try {
        if (c->running) return -EBUSY;
        c->unmap();
        std::vector<StreamRole> roles{StreamRole::VideoRecording};
        c->config = c->camera->generateConfiguration(roles);
        if (!c->config || c->config->empty()) return -EINVAL;
        StreamConfiguration &s = c->config->at(0);
        s.pixelFormat = PixelFormat(fourcc);
        s.size = Size(width, height);
        if (buffers > 0) s.bufferCount = buffers;
        if (c->config->validate() == CameraConfiguration::Invalid) return -EINVAL;
        int r = c->camera->configure(c->config.get());
        if (r < 0) return r;
        c->stream = s.stream();
        c->allocator = std::make_unique<FrameBufferAllocator>(c->camera);
        r = c->allocator->allocate(c->stream);
        if (r < 0) return r;
        for (const auto &buffer : c->allocator->buffers(c->stream)) {
            // The planes must follow each other in one buffer: the frame is handed on as one span.
            const auto &planes = buffer->planes();
            for (size_t i = 1; i < planes.size(); i++) {
                if (planes[i].fd.get() != planes[0].fd.get() || planes[i].offset != planes[i - 1].offset + planes[i - 1].length) {
                    c->unmap();
                    return -ENOTSUP;
                }
            }
            const auto &last = planes.back();
            size_t length = size_t(last.offset) + last.length;
            void *base = mmap(nullptr, length, PROT_READ, MAP_SHARED, planes[0].fd.get(), 0);
            if (base == MAP_FAILED) {
                int e = errno;
                c->unmap();
                return -e;
            }
            c->mappings.push_back({base, length});
            c->data.push_back(static_cast<const uint8_t *>(base) + planes[0].offset);
            std::unique_ptr<Request> request = c->camera->createRequest(c->requests.size());
            if (!request || request->addBuffer(c->stream, buffer.get()) < 0) {
                c->unmap();
                return -EIO;
            }
            c->requests.push_back(std::move(request));
        }
        out->fourcc = s.pixelFormat.fourcc();
        out->width = s.size.width;
        out->height = s.size.height;
        out->stride = s.stride;
        out->frame_size = s.frameSize;
        out->buffers = uint32_t(c->requests.size());
        out->adjusted = out->fourcc != fourcc || out->width != width || out->height != height;  // a count it chose is no refusal
        return 0;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int64_t lc_camera_set_control(lc_camera *c, const char *name, const double *values, size_t count) {
    try {
        const ControlInfo *info = nullptr;
        const ControlId *id = find(c, name, &info);
        if (!id) return -ENOTSUP;
        // libcamera takes any value for any control: the range (each element's, for an array)
        // and an enumerated control's values are checked here.
        double min, max;
        bool ranged = lc::toDouble(info->min(), &min) && lc::toDouble(info->max(), &max);
        for (size_t i = 0; i < count; i++) {
            if (!std::isfinite(values[i])) return -EINVAL;
            if (ranged && (values[i] < min || values[i] > max)) return -ERANGE;
            if (!info->values().empty() && id->type() != ControlTypeBool) {
                bool listed = false;
                for (const ControlValue &v : info->values()) {
                    double d;
                    listed = listed || (lc::toDouble(v, &d) && d == values[i]);
                }
                if (!listed) return -ERANGE;
            }
        }
        ControlValue v;
        if (!lc::fromDoubles(id->type(), lc::isArray(*id), values, count, &v)) return -EINVAL;
        std::lock_guard<std::mutex> guard(c->lock);
        c->pending[id->id()] = v;
        c->current[id->id()] = v;
        return ++c->generation;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int lc_camera_get_control(lc_camera *c, const char *name, double *out, size_t cap, size_t *count, int32_t *from_metadata) {
    try {
        const ControlId *id = known(c, name);
        if (!id) return -ENOTSUP;
        std::lock_guard<std::mutex> guard(c->lock);
        for (auto *values : {&c->latest, &c->current}) {
            auto it = values->find(id->id());
            if (it == values->end()) continue;
            long n = lc::toDoubles(it->second, out, cap);
            if (n < 0) return -EINVAL;
            *count = size_t(n);
            *from_metadata = values == &c->latest;
            return size_t(n) > cap ? -ENOSPC : 0;
        }
        return -ENOENT;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int lc_camera_wait_applied(lc_camera *c, int64_t generation, int timeout_ms) {
    try {
        std::unique_lock<std::mutex> guard(c->lock);
        if (!c->running) return -EACCES;
        bool done = c->applied.wait_for(guard, std::chrono::milliseconds(timeout_ms),
                                        [&] { return c->done_generation >= generation || !c->running; });
        return done && c->running ? 0 : done ? -EACCES : -ETIMEDOUT;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int lc_camera_start(lc_camera *c) {
    try {
        if (c->requests.empty()) return -EACCES;
        ControlList initial(c->camera->controls());
        {
            std::lock_guard<std::mutex> guard(c->lock);
            for (const auto &[id, v] : c->current) initial.set(id, v);
            // And with the first request: a pipeline handler may ignore the start's controls
            // (vimc's does), and every handler applies a request's.
            c->pending = c->current;
            c->done.clear();
            c->latest.clear();  // a new run's metadata only
            c->done_generation = c->generation;  // what was set before is in the start's controls
            c->request_generation.assign(c->requests.size(), c->generation);
        }
        int r = c->camera->start(&initial);
        if (r < 0) return r;
        c->running = true;
        for (uint32_t i = 0; i < c->requests.size(); i++) {
            r = lc_camera_queue(c, i);
            if (r < 0) {
                lc_camera_stop(c);
                return r;
            }
        }
        return 0;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int lc_camera_stop(lc_camera *c) {
    try {
        if (!c->running) return 0;
        c->running = false;
        int r = c->camera->stop();  // every queued request completes, cancelled, before it returns
        std::lock_guard<std::mutex> guard(c->lock);
        c->done.clear();
        c->applied.notify_all();  // a wait for settings ends: nothing will apply them now
        return r;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int lc_camera_completion_fd(const lc_camera *c) { return c->completions; }

static Request *take(lc_camera *c) {
    std::lock_guard<std::mutex> guard(c->lock);
    if (c->done.empty()) return nullptr;
    Request *r = c->done.front();
    c->done.pop_front();
    return r;
}

extern "C" int lc_camera_next(lc_camera *c, lc_completion *out) {
    try {
        Request *r = take(c);
        if (!r) {
            // Empty: consume the wake-ups, then look once more (a completion between the two
            // is taken now; one after wakes the descriptor again).
            uint64_t n;
            ssize_t got = read(c->completions, &n, sizeof n);
            (void)got;
            r = take(c);
            if (!r) return -EAGAIN;
        }
        std::memset(out, 0, sizeof *out);
        out->index = uint32_t(r->cookie());
        FrameBuffer *buffer = r->findBuffer(c->stream);
        if (!buffer || out->index >= c->data.size()) return 0;  // ok 0: dropped, and queued again
        const FrameMetadata &meta = buffer->metadata();
        out->ok = r->status() == Request::RequestComplete && meta.status == FrameMetadata::FrameSuccess;
        out->sequence = meta.sequence;
        out->timestamp_ns = meta.timestamp;
        out->data = c->data[out->index];
        for (const auto &plane : meta.planes()) out->bytes += plane.bytesused;
        if (!out->ok) {
            // A request that failed took its controls with it: they go with the next one queued
            // (unless set again since). (A wait for them may still end on a later request that
            // was queued before this one came back: rare, as requests fail at a stop.)
            std::lock_guard<std::mutex> guard(c->lock);
            for (const auto &[id, v] : r->controls()) c->pending.emplace(id, v);
        }
        if (out->ok) {
            std::lock_guard<std::mutex> guard(c->lock);
            for (const auto &[id, v] : r->metadata()) {
                c->latest[id] = v;
                if (id == controls::SCALER_CROP) out->has_crop = lc::toDoubles(v, out->crop, 4) == 4;
            }
            if (c->request_generation[out->index] > c->done_generation) {
                c->done_generation = c->request_generation[out->index];
                c->applied.notify_all();
            }
        }
        return 0;
    } catch (...) {
        return -EIO;
    }
}

extern "C" int lc_camera_queue(lc_camera *c, uint32_t index) {
    try {
        if (!c->running) return -EACCES;
        if (index >= c->requests.size()) return -EINVAL;
        Request *r = c->requests[index].get();
        r->reuse(Request::ReuseBuffers);
        std::map<unsigned, ControlValue> carried;
        {
            std::lock_guard<std::mutex> guard(c->lock);
            for (const auto &[id, v] : c->pending) r->controls().set(id, v);
            carried.swap(c->pending);
            c->request_generation[index] = c->generation;
        }
        int result = c->camera->queueRequest(r);
        if (result < 0) {
            // Not queued: what it was to carry waits for the next request (newer settings win).
            std::lock_guard<std::mutex> guard(c->lock);
            for (auto &[id, v] : carried) c->pending.emplace(id, v);
        }
        return result;
    } catch (...) {
        return -EIO;
    }
}

extern "C" void lc_camera_wake(lc_camera *c) {
    uint64_t one = 1;
    ssize_t written = write(c->completions, &one, sizeof one);
    (void)written;
}
