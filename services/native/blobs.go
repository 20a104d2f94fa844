package native

import "sync"

// blobStore keeps the blobs the server stores with the client during a
// run (kv_server_message set_blob), for it to read back (get_blob). It is
// bounded: past max bytes the oldest blobs go, and a later read of one
// gets an error rather than the gateway growing without end.
type blobStore struct {
	mu    sync.Mutex
	blobs map[string][]byte
	order []string
	size  int64
	max   int64
}

func newBlobStore(max int64) *blobStore {
	return &blobStore{blobs: map[string][]byte{}, max: max}
}

func (s *blobStore) set(id, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := string(id)
	if old, ok := s.blobs[key]; ok {
		s.size -= int64(len(old))
	} else {
		s.order = append(s.order, key)
	}
	s.blobs[key] = append([]byte(nil), data...)
	s.size += int64(len(data))
	for s.size > s.max && len(s.order) > 1 {
		oldest := s.order[0]
		s.order = s.order[1:]
		s.size -= int64(len(s.blobs[oldest]))
		delete(s.blobs, oldest)
	}
}

func (s *blobStore) get(id []byte) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[string(id)]
	return b, ok
}

// bytes is the memory the blobs take.
func (s *blobStore) bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}
