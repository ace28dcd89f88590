// The bound of `MQTTClient.messages`: how many messages the network thread has handed to the stream
// that its consumer has not taken yet. When it is full the network thread waits here (a C thread,
// so on a pthread condition, not in a Swift task) until the consumer takes one; libmosquitto reads
// nothing meanwhile, and the broker's TCP flow control holds the rest back. Nothing is dropped
// while someone reads (or will read: before the first consumer comes, the thread waits for it).
//
// The thread never waits for ever:
// - `close()` (stop, abort, a failure, the client released, the stream finished or its consuming
//   task cancelled) wakes it and it never waits again: what arrives is handed on without a bound
//   (the stream drops it, counted, once finished; stop() joins the thread before it finishes it);
// - when every iterator of a consumer that has begun is released (a `for await` left with `break`),
//   nobody takes messages: a message that finds the buffer full is dropped and counted, until an
//   iterator is made again.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class InboundWindow: @unchecked Sendable {  // mutable state only under `mutex`
    /// How many messages may wait for the consumer (`MQTTOptions.inboundBuffer`, at least 1).
    let capacity: Int
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let roomMade = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Handed to the stream and not yet taken by the consumer.
    private var held = 0
    /// The network thread waits on `roomMade`.
    private var producerWaiting = false
    /// Never wait again (see the file's comment).
    private var closed = false
    /// Live iterators, and whether one was ever made.
    private var consumers = 0
    private var consumerCame = false

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(roomMade, nil)
    }

    deinit {
        pthread_cond_destroy(roomMade)
        pthread_mutex_destroy(mutex)
        roomMade.deallocate()
        mutex.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Network thread, before it hands a message to the stream: waits while the buffer is full and
    /// someone reads (or has not begun yet). True: hand it on (and call `returned()` if the stream
    /// does not take it); false: nobody takes messages and the buffer is full, drop it.
    /// The caller disables thread cancellation around this (the wait is a cancellation point).
    func admit() -> Bool {
        locked {
            while held >= capacity && !closed && (consumers > 0 || !consumerCame) {
                producerWaiting = true
                pthread_cond_wait(roomMade, mutex)
            }
            producerWaiting = false
            guard held < capacity || closed else { return false }
            held += 1
            return true
        }
    }

    /// Consumer: took a message from the stream (or the stream did not take an admitted one).
    func taken() {
        locked {
            held -= 1
            if producerWaiting { pthread_cond_signal(roomMade) }
        }
    }

    /// The stream did not take an admitted message (it was finished).
    func returned() { taken() }

    /// An iterator was made.
    func consumerArrived() {
        locked {
            consumers += 1
            consumerCame = true
        }
    }

    /// An iterator was released: when it was the last, a waiting network thread drops instead.
    func consumerLeft() {
        locked {
            consumers -= 1
            if consumers == 0 { pthread_cond_broadcast(roomMade) }
        }
    }

    /// Wakes a waiting network thread; it never waits again.
    func close() {
        locked {
            closed = true
            pthread_cond_broadcast(roomMade)
        }
    }

    /// The network thread waits for room now (for tests).
    var isProducerWaiting: Bool { locked { producerWaiting } }
}
