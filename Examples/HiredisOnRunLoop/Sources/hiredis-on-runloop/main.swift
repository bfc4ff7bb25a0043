import HiredisExample
import RedisServer

// Starts a redis-server of its own (127.0.0.1, a free port, persistence off), asks it for a
// greeting through hiredis on this thread's run loop, prints the reply and stops the server.
let server = try RedisServer.start()
let reply = greeting(fromRedisOn: server.port)
server.stop()
print(reply ?? "no reply")
