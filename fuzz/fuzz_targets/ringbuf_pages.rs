//! The ring-buffer reader on arbitrary bytes: pages of 256 bytes (small pages reach every
//! header and event kind quickly), each record decoded as function_graph by formats with
//! the test kernel's layouts. No panic, whatever the input.
#![no_main]

use dcg_ringbuf::format::Format;
use dcg_ringbuf::graph::GraphFormats;
use libfuzzer_sys::fuzz_target;

const FORMATS: &str = "name: funcgraph_entry
ID: 11
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned long depth;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long args[];\toffset:24;\tsize:0;\tsigned:0;
name: fgraph_retaddr_entry
ID: 12
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned long depth;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned long retaddr;\toffset:24;\tsize:8;\tsigned:0;
\tfield:unsigned long args[];\toffset:32;\tsize:0;\tsigned:0;
name: funcgraph_exit
ID: 10
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned long retval;\toffset:16;\tsize:8;\tsigned:0;
\tfield:unsigned int depth;\toffset:24;\tsize:4;\tsigned:0;
\tfield:unsigned int overrun;\toffset:28;\tsize:4;\tsigned:0;
\tfield:unsigned long long calltime;\toffset:32;\tsize:8;\tsigned:0;
\tfield:unsigned long long rettime;\toffset:40;\tsize:8;\tsigned:0;
name: print
ID: 5
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;
\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;
";

fuzz_target!(|data: &[u8]| {
    let formats = GraphFormats::new(&Format::parse_all(FORMATS).expect("formats")).expect("graph");
    let whole = data.len() / 256 * 256;
    if let Ok(pages) = dcg_ringbuf::page::pages(&data[..whole], 256) {
        for p in &pages {
            for r in &p.records {
                let _ = formats.decode(r);
            }
        }
    }
    let _ = dcg_ringbuf::page::parse_page(data, 0);
});
